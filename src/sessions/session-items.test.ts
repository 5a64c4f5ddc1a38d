import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mergeCatalogs } from '../i18n/catalog.ts';
import { createTranslations } from '../i18n/translator.ts';
import { toSessionItems } from './session-items.ts';
import { SESSIONS_MESSAGES } from './session-texts.ts';
import type { SessionSummary } from './session.types.ts';

const CHROME_ON_LINUX = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const translations = createTranslations(mergeCatalogs([{ name: 'sessions', messages: SESSIONS_MESSAGES }]));

describe('toSessionItems', () => {
  const NOW = Date.UTC(2026, 0, 5, 14, 3);
  const session = (id: string, userAgent: string | null, ageMs: number): SessionSummary => ({
    id,
    userAgent,
    ip: null,
    createdAt: NOW - ageMs,
    lastSeenAt: NOW - ageMs,
    expiresAt: NOW + 30 * 86_400_000,
  });
  const list = [session('a', null, 3 * 3_600_000), session('b', CHROME_ON_LINUX, 20_000)];

  it('lists this browser’s session first, then by last use; devices, addresses and times in the page’s language', () => {
    const items = toSessionItems(list, 'a', { i18n: translations.translator('de'), nowMs: NOW });
    assert.deepEqual(
      items.map((item) => [item.id, item.isCurrent, item.device, item.userAgent, item.ip, item.createdAt.relative, item.lastSeenAt.text, item.expiresAt.relative]),
      [
        ['a', true, 'Unbekanntes Gerät', 'Unbekanntes Gerät', 'Unbekannt', 'vor 3 Stunden', '5. Jan. 2026, 11:03 UTC', 'in 30 Tagen'],
        ['b', false, 'Chrome unter Linux', CHROME_ON_LINUX, 'Unbekannt', 'jetzt', '5. Jan. 2026, 14:02 UTC', 'in 30 Tagen'],
      ],
    );
    assert.equal(toSessionItems(list, null, { i18n: translations.translator('ja'), nowMs: NOW })[1]!.createdAt.relative, '3 時間前');
  });

  it('without a language: English, and the times as before ("2026-01-05 14:02 UTC")', () => {
    const [first] = toSessionItems(list, null, { nowMs: NOW });
    assert.deepEqual([first!.device, first!.ip, first!.createdAt.text, first!.createdAt.relative, first!.createdAt.iso], ['Chrome on Linux', 'Unknown', '2026-01-05 14:02 UTC', 'now', '2026-01-05T14:02:40.000Z']);
  });
});
