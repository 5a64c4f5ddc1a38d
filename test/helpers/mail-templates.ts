/** Every module's mail templates and catalogs, as the running service has them: for tests that render mails without an app. */
import { MODULES } from '../../src/modules.ts';
import { collectMailTemplates, collectSecurityNotices } from '../../src/module.ts';
import { mergeCatalogs } from '../../src/i18n/catalog.ts';
import { createTranslations } from '../../src/i18n/translator.ts';
import { WEB_MESSAGES } from '../../src/web/render.ts';
import type { SecurityChange } from '../../src/mail/templates.ts';

/** Every module's catalogs (the i18n module's `translations` service). */
export const translations = createTranslations(
  mergeCatalogs([{ name: 'web', messages: WEB_MESSAGES }, ...MODULES.flatMap((module) => (module.messages === undefined ? [] : [{ name: module.name, messages: module.messages }]))]),
);

/** Every module's mail templates, by name. */
export const mailTemplates = collectMailTemplates(MODULES);

/** Every change a security notice tells of. */
export const SECURITY_CHANGES = [...collectSecurityNotices(MODULES).keys()] as SecurityChange[];
