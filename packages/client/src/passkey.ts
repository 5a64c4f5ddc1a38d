/**
 * A passkey step in the browser: a whole sign-in with any passkey the authenticator holds for
 * Gatehouse, or, with the `mfaToken` of a 403 MFA_REQUIRED, the second factor of that sign-in.
 *
 * The WebAuthn ceremony (JSON options in, `navigator.credentials.get()`, JSON answer out) is
 * @simplewebauthn/browser's, the library Gatehouse's own pages use; it is imported only when a
 * passkey is used, so bundlers put it in a chunk of its own and apps without passkeys never load it.
 * Gatehouse answers the verification with the body `POST /api/auth` gives and the session cookies
 * (cookie mode uses those, token mode the body): the caller's `finish` turns it into a result.
 */
import type { GatehouseError, SignInResult } from './types.ts';
import { errorFrom, isResponse, readJson } from './http.ts';

type CallService = (path: string, init: RequestInit & { json?: unknown }) => Promise<Response | GatehouseError>;
type WebAuthn = Pick<typeof import('@simplewebauthn/browser'), 'browserSupportsWebAuthn' | 'startAuthentication'>;
type RequestOptionsJSON = Parameters<WebAuthn['startAuthentication']>[0]['optionsJSON'];

function failure(code: 'PASSKEY_UNAVAILABLE' | 'PASSKEY_CANCELLED', message: string, cause?: unknown): SignInResult {
  return { status: 'error', error: { code, message, ...(cause !== undefined && { cause }) } };
}

async function loadWebAuthn(): Promise<WebAuthn | null> {
  try {
    const webauthn: WebAuthn = await import('@simplewebauthn/browser');
    return webauthn.browserSupportsWebAuthn() ? webauthn : null;
  } catch {
    return null;
  }
}

export async function passkeyStep(callService: CallService, finish: (response: Response | GatehouseError) => Promise<SignInResult>, mfaToken?: string): Promise<SignInResult> {
  // Before asking for options: a challenge nobody can answer is not made.
  const webauthn = await loadWebAuthn();
  if (webauthn === null) return failure('PASSKEY_UNAVAILABLE', 'Passkeys need a browser with WebAuthn (and @simplewebauthn/browser, a dependency of this package).');
  const token = mfaToken === undefined ? {} : { mfaToken };
  const options = await callService('/api/auth/passkeys/authenticate/options', { method: 'POST', json: token });
  if (!isResponse(options)) return { status: 'error', error: options };
  if (!options.ok) return { status: 'error', error: await errorFrom(options) };
  let answer: unknown;
  try {
    answer = await webauthn.startAuthentication({ optionsJSON: (await readJson(options)) as RequestOptionsJSON });
  } catch (cause) {
    // The person closed the prompt, the authenticator holds no passkey for us, or it timed out.
    return failure('PASSKEY_CANCELLED', cause instanceof Error ? cause.message : 'The passkey prompt was closed.', cause);
  }
  return finish(await callService('/api/auth/passkeys/authenticate/verify', { method: 'POST', json: { response: answer, ...token } }));
}
