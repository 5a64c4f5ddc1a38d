import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mergeCatalogs } from '../i18n/catalog.ts';
import { createTranslations } from '../i18n/translator.ts';
import { deviceLabel, parseDevice } from './device-label.ts';
import { SESSIONS_MESSAGES } from './session-texts.ts';

const CHROME_ON_LINUX = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const translations = createTranslations(mergeCatalogs([{ name: 'sessions', messages: SESSIONS_MESSAGES }]));

describe('deviceLabel', () => {
  it('names browsers and systems as people say them', () => {
    const cases: Array<[string, string]> = [
      [CHROME_ON_LINUX, 'Chrome on Linux'],
      ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1', 'Safari on iOS'],
      ['Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0', 'Firefox on Windows'],
      ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0', 'Microsoft Edge on macOS'],
    ];
    for (const [header, label] of cases) assert.equal(deviceLabel(header), label);
  });

  it('says "{browser} on {system}" in the page’s language; the names stay names', () => {
    assert.deepEqual(parseDevice(CHROME_ON_LINUX), { browser: 'Chrome', system: 'Linux' });
    assert.equal(deviceLabel(CHROME_ON_LINUX, translations.translator('en')), 'Chrome on Linux');
    assert.equal(deviceLabel(CHROME_ON_LINUX, translations.translator('de')), 'Chrome unter Linux');
    assert.equal(deviceLabel(CHROME_ON_LINUX, translations.translator('ja')), 'Chrome（Linux）');
    assert.equal(deviceLabel('curl/8.5.0', translations.translator('de')), 'curl');
  });

  it('names what it does not recognise by its product token, and nothing by nothing', () => {
    assert.equal(deviceLabel('curl/8.5.0'), 'curl');
    assert.equal(deviceLabel('TargetBrowser/1.0'), 'TargetBrowser');
    assert.equal(deviceLabel(`${'A'.repeat(100)}/1`), 'A'.repeat(40));
    for (const header of [null, '', '   ', '<script>', '()']) assert.equal(deviceLabel(header), null, String(header));
  });
});
