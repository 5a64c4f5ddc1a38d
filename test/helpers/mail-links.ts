/** Reading the mails a reset or a sign-up sends, as the loopback SMTP server received them. */
import assert from 'node:assert/strict';
import type { ReceivedMail, TestSmtpServer } from './smtp.ts';

/** How long a test waits for a mail to arrive. */
export const MAIL_WAIT_MS = 10_000;

/** The one reset link in a mail, the same in the text and the HTML part. */
export function resetLink(mail: ReceivedMail): URL {
  const links = mail.text.match(/https?:\/\/\S+\/auth\/reset-password\?token=[\w-]+/g) ?? [];
  assert.equal(links.length, 1, mail.text);
  assert.ok(mail.html.includes(`href="${links[0]}"`), 'the HTML part has the same link');
  return new URL(links[0]!);
}

export const tokenOf = (mail: ReceivedMail) => resetLink(mail).searchParams.get('token')!;

export async function waitFor<T>(find: () => T | undefined, what: string, timeoutMs = MAIL_WAIT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The `nth` (1-based) mail to `to` with this subject, once it has arrived. */
export function mailTo(smtp: TestSmtpServer, to: string, subject: string, nth = 1): Promise<ReceivedMail> {
  return waitFor(() => smtp.messages.filter((m) => m.rcptTo.includes(to) && m.subject === subject)[nth - 1], `mail #${nth} "${subject}" to ${to}`);
}

/** The one verification link in a mail, checked to be the same in the text and the HTML part. */
export function verificationLink(mail: ReceivedMail): URL {
  const links = mail.text.match(/https?:\/\/\S+\/auth\/verify-email\?token=[\w-]+/g) ?? [];
  assert.equal(links.length, 1, mail.text);
  assert.ok(mail.html.includes(`href="${links[0]}"`), 'the HTML part has the same link');
  return new URL(links[0]!);
}
