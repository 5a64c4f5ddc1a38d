/** Response schemas shared by every feature's routes (and so by the OpenAPI document). */
import { z } from 'zod';
import { decodeCursor } from '../lib/keyset-cursor.ts';

export const errorResponse = z
  .object({
    // The codes are declared by the modules (each in its errors file), so the list lives in
    // docs/errors.md, generated from them, rather than in an enum built before they load.
    error: z.string().regex(/^[A-Z][A-Z0-9_]*$/).describe('Stable, UPPER_SNAKE error code: every one is listed in docs/errors.md'),
    message: z.string().describe('Human-readable explanation'),
    errors: z
      .array(
        z.object({
          field: z.string(),
          message: z.string(),
          reason: z.string().optional().describe('A stable code where a client may act on it: why a new password was refused (TOO_SHORT, TOO_LONG, TOO_COMMON, CONTAINS_IDENTITY, TOO_GUESSABLE)'),
        }),
      )
      .optional()
      .describe('Present on VALIDATION_ERROR: one entry per offending field'),
  })
  .meta({ id: 'ErrorResponse' });

/** A keyset list's `cursor` query field: the `nextCursor` its previous page gave (lib/keyset-cursor.ts). */
export const keysetCursorField = z
  .string()
  .max(200)
  .refine((value) => decodeCursor(value) !== null, 'is not a cursor from a previous page')
  .optional()
  .describe('`nextCursor` of the previous page');

/** Error responses every JSON endpoint with a body can give. */
export const bodyErrorResponses = {
  400: errorResponse.describe('Malformed JSON (MALFORMED_JSON)'),
  413: errorResponse.describe('Body larger than the limit (PAYLOAD_TOO_LARGE)'),
  415: errorResponse.describe('Body is not application/json (UNSUPPORTED_MEDIA_TYPE)'),
  422: errorResponse.describe('Invalid fields (VALIDATION_ERROR), listed in `errors`'),
  500: errorResponse.describe('Unexpected failure (INTERNAL_ERROR); reveals nothing internal'),
  503: errorResponse.describe('A dependency is unavailable (SERVICE_UNAVAILABLE); retry after `Retry-After`'),
} as const;
