/**
 * The audit log's words for its event types: every type a module declares reads in words in every
 * language, the core's from the admin catalogs (`admin.eventType.<type>`), the others from the
 * declaring module's own (`<module>.eventType.<type>`); a type nobody names gets the generic text.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MODULES } from '../modules.ts';
import { collectAuditEventOwners } from '../module.ts';
import { mergeCatalogs } from '../i18n/catalog.ts';
import { LOCALES } from '../i18n/locales.ts';
import { createTranslations } from '../i18n/translator.ts';
import { WEB_MESSAGES } from '../web/render.ts';
import { eventWords, isFailureType } from './admin-events.ts';

const catalogs = mergeCatalogs([{ name: 'web', messages: WEB_MESSAGES }, ...MODULES.flatMap((module) => (module.messages === undefined ? [] : [{ name: module.name, messages: module.messages }]))]);
const translations = createTranslations(catalogs);
const owners = collectAuditEventOwners(MODULES);

describe('audit event words', () => {
  it('names every type a module declares in words, in every language (never "Other event")', () => {
    assert.ok(owners.size > 80, 'the modules declare their types');
    for (const locale of LOCALES) {
      const i18n = translations.translator(locale);
      const generic = (type: string) => i18n.t('admin.eventType.other', { type: type.replace(/[._]+/g, ' ') });
      assert.deepEqual([...owners.keys()].filter((type) => eventWords(type, i18n, owners) === generic(type)), [], `${locale}: types shown as the generic text`);
      // In the language's own catalog, not English's as a fallback.
      const untranslated = [...owners].filter(([type, owner]) => !Object.hasOwn(catalogs[locale], `admin.eventType.${type}`) && !Object.hasOwn(catalogs[locale], `${owner}.eventType.${type}`));
      assert.deepEqual(untranslated, [], `${locale}: types without words in the language`);
    }
  });

  it('finds the declaring module’s words after the admin catalogs’, and the generic text for a type nobody names', () => {
    const en = translations.translator('en');
    assert.equal(eventWords('signin.success', en, owners), 'Signed in', 'a core type: the admin catalogs');
    assert.equal(eventWords('webhook.endpoint_created', en, owners), 'Webhook endpoint created', 'the webhooks module’s catalogs');
    assert.equal(eventWords('passkey.renamed', translations.translator('de'), owners), 'Passkey umbenannt');
    assert.equal(eventWords('webhook.endpoint_created', en, new Map()), 'Other event: webhook endpoint created', 'without its module, the generic text');
    assert.equal(eventWords('webhook.endpoint_created', en, new Map([['webhook.endpoint_created', 'sso']])), 'Other event: webhook endpoint created', 'only the declaring module’s key counts');
    assert.equal(eventWords('no.such_type', en, owners), 'Other event: no such type');
  });

  it('counts the refused or failed types as failures (the outcome filter and the row\'s mark), and no other', () => {
    const failures: string[] = [...owners.keys()].filter(isFailureType).sort();
    // Every declared type read by hand: these seven record a refusal or something gone wrong.
    assert.deepEqual(failures, ['api_key.use_failed', 'org_domain.verification_failed', 'refresh.reuse_detected', 'signin.failure', 'sso.signin_failed', 'user.password_locked', 'webhook.endpoint_auto_disabled']);
  });
});
