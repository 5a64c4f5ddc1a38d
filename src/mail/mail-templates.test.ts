/**
 * The `mailTemplates` and `securityNotices` slots: every module owns its mails; a name two modules
 * declare stops the start, as does a change whose texts its module's catalogs lack; the mail module
 * names no other module's template or change.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { MODULES } from '../modules.ts';
import { collectMailTemplates, collectSecurityNotices, defineModule } from '../module.ts';
import { createMailRenderer, defineMailTemplates } from './templates.ts';
import { mailTemplates, translations } from '../../test/helpers/mail-templates.ts';

const SRC = join(import.meta.dirname, '..');

describe('mail templates slot', () => {
  it('collects every module’s templates, each from its own folder', () => {
    for (const module of MODULES) {
      for (const template of Object.values(module.mailTemplates?.(MODULES) ?? {})) {
        assert.equal(relative(SRC, template!.dir).split('/')[0], module.name, `${module.name}'s templates are in its folder`);
      }
    }
    assert.ok(mailTemplates.has('verify-email') && mailTemplates.has('security-notice'));
  });

  it('stops the start when two modules declare one template, or one security change', () => {
    const twice = defineMailTemplates({ 'verify-email': { dir: '.', subject: () => '' } });
    const one = defineModule({ name: 'one', mailTemplates: () => twice, securityNotices: ['totpAdded'] });
    const other = defineModule({ name: 'other', mailTemplates: () => twice, securityNotices: ['totpAdded'] });
    assert.throws(() => collectMailTemplates([one, other]), /the mail template "verify-email" is declared by both "one" and "other"/);
    assert.throws(() => collectSecurityNotices([one, other]), /the security change "totpAdded" is declared by both "one" and "other"/);
  });

  it('stops the start when the catalogs lack a security change’s texts', () => {
    const modules = [...MODULES, defineModule({ name: 'stranger', securityNotices: ['strangerAdded'] })];
    assert.throws(() => createMailRenderer({ authUrl: 'https://auth.example.test', translations, templates: collectMailTemplates(modules) }), /the catalogs lack stranger\.mail\.security-notice\.strangerAdded\.subject/);
  });

  it('the mail module names no other module’s template or security change', () => {
    const others = [...mailTemplates.keys()].filter((name) => name !== 'security-notice');
    const changes = [...collectSecurityNotices(MODULES).keys()];
    const files = readdirSync(join(SRC, 'mail'), { recursive: true, encoding: 'utf8' }).filter((file) => !file.endsWith('.test.ts') && (file.endsWith('.ts') || file.endsWith('.eta') || file.endsWith('.json')));
    for (const file of files) {
      const text = readFileSync(join(SRC, 'mail', file), 'utf8');
      for (const name of [...others, ...changes]) assert.ok(!text.includes(name), `mail/${file} names "${name}"`);
    }
  });
});
