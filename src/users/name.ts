/**
 * Display names: the one rule every place that sets a name applies (sign-up, the admin API, the
 * CLI, ADMIN_NAME, names from providers), and the one answer to "may a mail greet the user by
 * it?". A name is typed by whoever creates the account, who need not own its address.
 */
import { z } from 'zod';
import type { User } from './user.service.ts';

export const MAX_NAME_LENGTH = 200;

/**
 * Control characters (\p{Cc}), format characters (\p{Cf}: bidi overrides, embeddings and
 * isolates, zero-width spaces and joiners, the BOM, soft hyphens…) and the line and paragraph
 * separators (U+2028, U+2029). They are invisible, reorder the text around them or break lines:
 * in a name shown on the admin pages, in the CLI's table or in a mail, they let a text read other
 * than it is (a reversed URL, a hidden word, a forged line).
 */
const FORBIDDEN_CHARACTERS = /[\p{Cc}\p{Cf}\u2028\u2029]/u;
const FORBIDDEN_CHARACTERS_ALL = new RegExp(FORBIDDEN_CHARACTERS.source, 'gu');

export const NAME_CHARACTERS_MESSAGE = 'must not contain control, invisible formatting (such as bidirectional overrides or zero-width characters) or line separator characters';

const required = (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be a string');

/** A request field holding a name: trimmed, 1 to MAX_NAME_LENGTH characters, none forbidden. */
export const nameField = z
  .string({ error: required })
  .trim()
  .min(1, 'is required')
  .max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`)
  .refine((name) => !FORBIDDEN_CHARACTERS.test(name), NAME_CHARACTERS_MESSAGE);

/** Whether `name` (untrimmed) passes `nameField`. */
export function isValidName(name: string): boolean {
  return nameField.safeParse(name).success;
}

/** The reason `nameField` refuses `name` ("must …"), or null when it is valid. */
export function nameProblem(name: string): string | null {
  const parsed = nameField.safeParse(name);
  return parsed.success ? null : (parsed.error.issues[0]?.message ?? 'is invalid');
}

/**
 * A name from elsewhere that cannot be refused (a provider's profile): the forbidden characters
 * dropped, trimmed and cut to length; null when nothing is left.
 */
export function toValidName(value: string): string | null {
  const name = value.replace(FORBIDDEN_CHARACTERS_ALL, '').trim().slice(0, MAX_NAME_LENGTH).trim();
  return name === '' ? null : name;
}

/**
 * The name a mail may greet the user by, or null for a neutral greeting. Only a confirmed name
 * (`nameConfirmedAt`: given by an administrator, the CLI or a provider that verified the address,
 * or accepted by the owner when they followed the verification link): whoever signs up with an address
 * they do not own chooses the name, and must not be able to put words in genuine mails to the
 * address's owner (a reset link, "you already have an account").
 */
export function greetingName(user: Pick<User, 'name' | 'nameConfirmedAt'>): string | null {
  return user.nameConfirmedAt !== null && isValidName(user.name) ? user.name : null;
}
