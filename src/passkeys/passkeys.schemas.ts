/** The request and response schemas of the passkeys API (and so of its OpenAPI document). */
import { z } from 'zod';
import { errorResponse } from '../http/schemas.ts';
import { isValidName, NAME_CHARACTERS_MESSAGE } from '../users/name.ts';
import { isoTime } from '../lib/clock.ts';
import { MAX_CREDENTIAL_ID_LENGTH, type PasskeyView } from './passkeys.service.ts';

export const MAX_PASSKEY_NAME_LENGTH = 64;
export const MAX_MFA_TOKEN_LENGTH = 200;

export const required = (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be a string');
export const base64url = (max: number) =>
  z
    .string({ error: required })
    .min(1, 'is required')
    .max(max, `must be at most ${max} characters`)
    .regex(/^[A-Za-z0-9_-]+$/, 'must be base64url');
export const credentialId = base64url(MAX_CREDENTIAL_ID_LENGTH);
export const extensionResults = z.record(z.string(), z.unknown()).default({}).describe('The client extension results');

export const passkeyName = z
  .string({ error: required })
  .trim()
  .min(1, 'is required')
  .max(MAX_PASSKEY_NAME_LENGTH, `must be at most ${MAX_PASSKEY_NAME_LENGTH} characters`)
  .refine(isValidName, NAME_CHARACTERS_MESSAGE);

export const registrationResponse = z
  .object(
    {
      id: credentialId,
      rawId: credentialId,
      type: z.literal('public-key'),
      response: z
        .object({
          clientDataJSON: base64url(4096),
          attestationObject: base64url(12_288),
          transports: z.array(z.string().max(32)).max(16).optional(),
        })
        .loose(),
      authenticatorAttachment: z.string().max(32).optional(),
      clientExtensionResults: extensionResults,
    },
    { error: 'must be an object' },
  )
  .loose()
  .describe('`navigator.credentials.create()`\'s answer as JSON (RegistrationResponseJSON, e.g. from @simplewebauthn/browser `startRegistration`)');

export const authenticationResponse = z
  .object(
    {
      id: credentialId,
      rawId: credentialId,
      type: z.literal('public-key'),
      response: z
        .object({
          clientDataJSON: base64url(4096),
          authenticatorData: base64url(4096),
          signature: base64url(2048),
          userHandle: z.string().max(1024).nullable().optional(),
        })
        .loose(),
      authenticatorAttachment: z.string().max(32).optional(),
      clientExtensionResults: extensionResults,
    },
    { error: 'must be an object' },
  )
  .loose()
  .describe('`navigator.credentials.get()`\'s answer as JSON (AuthenticationResponseJSON, e.g. from @simplewebauthn/browser `startAuthentication`)');

export const mfaToken = z.string({ error: required }).min(1, 'is required').max(MAX_MFA_TOKEN_LENGTH).describe('The `mfaToken` of a 403 MFA_REQUIRED: the passkey is then the second factor of that sign-in');

export const passkeyView = z
  .object({ id: z.string(), name: z.string(), createdAt: z.iso.datetime(), lastUsedAt: z.iso.datetime().nullable() })
  .meta({ id: 'Passkey' });

// The options as @simplewebauthn/server makes them (WebAuthn's `…OptionsJSON`); the extensions we ask for.
export const credentialDescriptor = z.object({ id: z.string(), type: z.string(), transports: z.array(z.string()).optional() });
export const extensionInputs = z.object({ credProps: z.boolean().optional() });

export const creationOptions = z
  .object({
    rp: z.object({ name: z.string(), id: z.string().optional() }),
    user: z.object({ id: z.string().describe('The user handle: base64url of the user id'), name: z.string(), displayName: z.string() }),
    challenge: z.string(),
    pubKeyCredParams: z.array(z.object({ alg: z.number(), type: z.string() })),
    timeout: z.number().optional(),
    excludeCredentials: z.array(credentialDescriptor).optional(),
    authenticatorSelection: z
      .object({ authenticatorAttachment: z.string().optional(), requireResidentKey: z.boolean().optional(), residentKey: z.string().optional(), userVerification: z.string().optional() })
      .optional(),
    hints: z.array(z.string()).optional(),
    attestation: z.string().optional(),
    extensions: extensionInputs.optional(),
  })
  .describe('PublicKeyCredentialCreationOptionsJSON: hand it to `navigator.credentials.create()` (e.g. @simplewebauthn/browser `startRegistration({ optionsJSON })`)')
  .meta({ id: 'PasskeyCreationOptions' });

export const requestOptions = z
  .object({
    challenge: z.string(),
    timeout: z.number().optional(),
    rpId: z.string().optional(),
    allowCredentials: z.array(credentialDescriptor).optional(),
    userVerification: z.string().optional(),
    hints: z.array(z.string()).optional(),
    extensions: extensionInputs.optional(),
  })
  .describe('PublicKeyCredentialRequestOptionsJSON: hand it to `navigator.credentials.get()` (e.g. @simplewebauthn/browser `startAuthentication({ optionsJSON })`)')
  .meta({ id: 'PasskeyRequestOptions' });

export const signInResponse = z.object({
  token: z.string().describe('Access token (JWT): `Authorization: Bearer <token>`'),
  user: z.object({ id: z.string(), email: z.string(), name: z.string() }),
  refreshToken: z.string(),
  expiresAt: z.iso.datetime(),
});

/** Nothing to send: no body, or `{}`. */
export const noBody = z.object({}, { error: 'must be a JSON object' }).nullish();
export const idParams = z.object({ id: z.string().min(1).max(64) });

export const signedInErrors = {
  401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
  403: errorResponse.describe('Signed in longer ago than REAUTH_WINDOW (REAUTH_REQUIRED), or a cookie-authenticated request without a valid CSRF token (CSRF_FAILED)'),
};

export const toJson = (passkey: PasskeyView) => ({ ...passkey, createdAt: isoTime(passkey.createdAt), lastUsedAt: passkey.lastUsedAt === null ? null : isoTime(passkey.lastUsedAt) });
