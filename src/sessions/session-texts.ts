/**
 * The sessions module's texts (`messages/<locale>.json`, keys `sessions.*`): how pages name a
 * session's device and a missing address. Pages pass their language; English is for a caller
 * that has none (a page whose texts are not in the catalogs yet).
 */
import { join } from 'node:path';
import { mergeCatalogs, readMessages } from '../i18n/catalog.ts';
import { DEFAULT_LOCALE } from '../i18n/locales.ts';
import { createTranslations, type Translator } from '../i18n/translator.ts';

export const SESSIONS_MESSAGES = readMessages(join(import.meta.dirname, 'messages'));

/** English, from this module's catalog alone (checked like every catalog: a broken one fails here too). */
export const ENGLISH_SESSION_TEXTS: Pick<Translator, 't' | 'locale'> = createTranslations(mergeCatalogs([{ name: 'sessions', messages: SESSIONS_MESSAGES }])).translator(DEFAULT_LOCALE);
