/**
 * A real SMTP server on loopback for mail tests (smtp-server + mailparser): plain SMTP by default
 * (STARTTLS is not offered), or STARTTLS offered with a self-signed certificate
 * (`{ startTls: true }`, like a stock Debian Postfix and its "snakeoil" certificate); AUTH offered
 * but optional. It records every message it accepts, parsed, and every AUTH attempt; it can be
 * stopped and started again on the same port to play an outage, and told to refuse with any reply
 * code at RCPT TO or after DATA, or to hold messages unanswered (a slow relay) to count how many a
 * client sends at once.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { SMTPServer, type SMTPServerAuthentication } from 'smtp-server';
import { simpleParser } from 'mailparser';

export interface ReceivedMail {
  /** Envelope sender and recipients, as given in MAIL FROM / RCPT TO. */
  mailFrom: string;
  rcptTo: string[];
  /** The From header as `Name <address>` (or the address alone). */
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  messageId: string;
  headers: Map<string, unknown>;
  /** The message came over TLS (after STARTTLS). */
  isSecure: boolean;
  /** The whole message as received. */
  raw: string;
}

export interface Refusal {
  /** An SMTP reply code, e.g. 451 (try later) or 550 (never). */
  code: number;
  stage: 'rcpt' | 'data';
  message?: string;
}

export interface TestSmtpServer {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly messages: ReceivedMail[];
  readonly authAttempts: Array<{ method: string; username: string | undefined; password: string | null | undefined }>;
  /** Refuse every message from now on with this reply, or accept again with null. */
  refuse(refusal: Refusal | null): void;
  /** Resolves when at least `count` messages have arrived; rejects after `timeoutMs`. */
  waitForMessages(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  /** Stops listening and drops open connections (an outage); `start()` comes back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Clears the recorded messages and auth attempts and accepts again (and stops holding). */
  reset(): void;
  /** From now on, hold each message's DATA unanswered (the client waits) until `release()`. */
  hold(): void;
  /** Answers every held message and stops holding. */
  release(): void;
  /** Resolves when at least `count` messages are held at once; rejects after `timeoutMs`. */
  waitForHeld(count: number, timeoutMs?: number): Promise<void>;
  /** Messages held unanswered now, and the most held at once since the last reset. */
  readonly held: number;
  readonly mostHeld: number;
}

export interface SmtpServerOptions {
  /** Offer STARTTLS, with a self-signed certificate (CN=gatehouse-test-snakeoil). Default false. */
  startTls?: boolean;
}

/**
 * Ours rather than smtp-server's built-in certificate: that one has expired, so a client would
 * refuse it for its date, not for being self-signed as a stock relay's certificate is.
 */
const SELF_SIGNED = {
  key: readFileSync(resolve(import.meta.dirname, '../fixtures/smtp-self-signed.key')),
  cert: readFileSync(resolve(import.meta.dirname, '../fixtures/smtp-self-signed.crt')),
};

export async function startSmtpServer(options: SmtpServerOptions = {}): Promise<TestSmtpServer> {
  const messages: ReceivedMail[] = [];
  const authAttempts: TestSmtpServer['authAttempts'] = [];
  const arrivals = new Set<() => void>();
  let refusal: Refusal | null = null;
  let server: SMTPServer | null = null;
  let holding: { promise: Promise<void>; release: () => void } | null = null;
  let held = 0;
  let mostHeld = 0;
  const heldChanges = new Set<() => void>();
  let port = 0;

  const refusalError = (current: Refusal) => Object.assign(new Error(current.message ?? `refused with ${current.code}`), { responseCode: current.code });

  function create(): SMTPServer {
    return new SMTPServer({
      // Plain SMTP unless asked: STARTTLS is not offered, so the client stays in clear.
      ...(options.startTls === true ? SELF_SIGNED : { disabledCommands: ['STARTTLS'] }),
      authOptional: true,
      allowInsecureAuth: true,
      disableReverseLookup: true,
      logger: false,
      closeTimeout: 50,
      onAuth(auth: SMTPServerAuthentication, _session, callback) {
        authAttempts.push({ method: auth.method, username: auth.username, password: auth.password });
        callback(null, { user: auth.username });
      },
      onRcptTo(_address, _session, callback) {
        if (refusal?.stage === 'rcpt') return callback(refusalError(refusal));
        callback();
      },
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', async () => {
          if (holding !== null) {
            held += 1;
            mostHeld = Math.max(mostHeld, held);
            for (const notify of heldChanges) notify();
            await holding.promise;
            held -= 1;
          }
          const current = refusal;
          if (current?.stage === 'data') return callback(refusalError(current));
          const raw = Buffer.concat(chunks);
          simpleParser(raw)
            .then((parsed) => {
              messages.push({
                mailFrom: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
                rcptTo: session.envelope.rcptTo.map((r) => r.address),
                from: parsed.from?.text ?? '',
                to: (Array.isArray(parsed.to) ? parsed.to.map((a) => a.text).join(', ') : parsed.to?.text) ?? '',
                subject: parsed.subject ?? '',
                text: parsed.text ?? '',
                html: typeof parsed.html === 'string' ? parsed.html : '',
                messageId: parsed.messageId ?? '',
                headers: parsed.headers as Map<string, unknown>,
                isSecure: session.secure,
                raw: raw.toString('utf8'),
              });
              for (const notify of arrivals) notify();
              callback();
            })
            .catch((error: Error) => callback(error));
        });
      },
    });
  }

  async function start(): Promise<void> {
    const next = create();
    // A client that goes away mid-session (Gatehouse stopped, an outage played by stop()) makes
    // the server emit ECONNRESET: expected here, and unheard it would fail the test process.
    next.on('error', () => {});
    await new Promise<void>((resolve, reject) => {
      next.server.once('error', reject);
      next.listen(port, '127.0.0.1', () => {
        next.server.off('error', reject);
        resolve();
      });
    });
    port = (next.server.address() as { port: number }).port;
    server = next;
  }

  await start();

  return {
    host: '127.0.0.1',
    get port() {
      return port;
    },
    messages,
    authAttempts,
    refuse(next) {
      refusal = next;
    },
    waitForMessages(count, timeoutMs = 5_000) {
      return waitUntil(() => messages.length >= count, arrivals, timeoutMs, () => `expected ${count} messages within ${timeoutMs} ms, got ${messages.length}`).then(() => messages);
    },
    async stop() {
      const current = server;
      server = null;
      if (current === null) return;
      await new Promise<void>((resolve) => {
        current.close(() => resolve());
        for (const connection of current.connections) connection.close();
      });
    },
    start,
    reset() {
      messages.length = 0;
      authAttempts.length = 0;
      refusal = null;
      holding?.release();
      holding = null;
      mostHeld = 0;
    },
    hold() {
      if (holding !== null) return;
      let release!: () => void;
      const promise = new Promise<void>((resolve) => (release = resolve));
      holding = { promise, release };
    },
    release() {
      holding?.release();
      holding = null;
    },
    waitForHeld(count, timeoutMs = 5_000) {
      return waitUntil(() => held >= count, heldChanges, timeoutMs, () => `expected ${count} messages held at once within ${timeoutMs} ms, got ${held}`);
    },
    get held() {
      return held;
    },
    get mostHeld() {
      return mostHeld;
    },
  };
}

/** Resolves once `isMet()` holds, checked now and at each call of the listener it adds to `listeners`; rejects with `message()` after `timeoutMs`. */
function waitUntil(isMet: () => boolean, listeners: Set<() => void>, timeoutMs: number, message: () => string): Promise<void> {
  if (isMet()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      listeners.delete(check);
      reject(new Error(message()));
    }, timeoutMs);
    const check = () => {
      if (!isMet()) return;
      clearTimeout(timer);
      listeners.delete(check);
      resolve();
    };
    listeners.add(check);
  });
}

/** The environment that sends Gatehouse's mail to `smtp`, with a short poll so tests do not wait. */
export function smtpEnv(smtp: Pick<TestSmtpServer, 'host' | 'port'>): Record<string, string> {
  return {
    EMAIL_SERVER_HOST: smtp.host,
    EMAIL_SERVER_PORT: String(smtp.port),
    EMAIL_FROM: 'Gatehouse <no-reply@example.test>',
    MAIL_POLL_INTERVAL_MS: '100',
  };
}
