/** For the module's tests: what a sign-in mail carries, as the loopback SMTP server received it. */
import assert from 'node:assert/strict';
import type { ReceivedMail } from '../../test/helpers/smtp.ts';

/** The link and the code of a sign-in mail, each the same in its text and its HTML part. */
export function linkAndCode(mail: ReceivedMail): { url: URL; token: string; code: string } {
  const links = mail.text.match(/https?:\/\/\S+\/auth\/email-signin\/link\?token=[\w-]+/g) ?? [];
  assert.equal(links.length, 1, mail.text);
  assert.ok(mail.html.includes(`href="${links[0]}"`), 'the HTML part has the same link');
  const code = /: (\d{6,8})\s*$/m.exec(mail.text)?.[1];
  assert.ok(code !== undefined, mail.text);
  assert.ok(mail.html.includes(`>${code}</strong>`), 'the HTML part has the same code');
  const url = new URL(links[0]!);
  return { url, token: url.searchParams.get('token')!, code };
}
