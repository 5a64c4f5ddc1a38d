/**
 * Outbox payloads at rest: a rendered mail can hold a reset or verification link, which is as good
 * as a password until it is used, so it is stored sealed (AES-256-GCM under a key derived from
 * AUTH_SECRET, bound to its row id), never in clear. A database dump alone reveals no link.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { deriveSecretKey } from '../lib/derive-key.ts';
import type { RenderedMail } from './templates.ts';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface PayloadSeal {
  seal(id: string, mail: RenderedMail): string;
  /** The mail, or null when the payload was not sealed with this AUTH_SECRET (or was altered). */
  open(id: string, sealed: string): RenderedMail | null;
}

export function createPayloadSeal(authSecret: string): PayloadSeal {
  const key = deriveSecretKey(authSecret, 'gatehouse mail outbox v1');
  return {
    seal(id, mail) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(id, 'utf8'));
      const body = Buffer.concat([cipher.update(JSON.stringify(mail), 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return `${VERSION}.${iv.toString('base64url')}.${body.toString('base64url')}`;
    },
    open(id, sealed) {
      const [version, ivText, bodyText] = sealed.split('.');
      if (version !== VERSION || ivText === undefined || bodyText === undefined) return null;
      const iv = Buffer.from(ivText, 'base64url');
      const body = Buffer.from(bodyText, 'base64url');
      if (iv.length !== IV_BYTES || body.length < TAG_BYTES) return null;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv);
        decipher.setAAD(Buffer.from(id, 'utf8'));
        decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
        const json = Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
        const value = JSON.parse(json) as RenderedMail;
        return typeof value.subject === 'string' && typeof value.text === 'string' && typeof value.html === 'string' ? value : null;
      } catch {
        return null;
      }
    },
  };
}
