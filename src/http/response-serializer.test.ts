import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import { compiledSerializer, createSerializerCompiler, plainJsonSchema } from './response-serializer.ts';

const session = z
  .object({
    user: z.object({ id: z.string(), email: z.string(), name: z.string(), roles: z.array(z.string()) }),
    session: z.object({ id: z.string(), expiresAt: z.iso.datetime().describe('end'), amr: z.array(z.string()), authTime: z.iso.datetime() }),
    claims: z.record(z.string(), z.unknown()),
    note: z.string().nullable(),
    count: z.number().int(),
    ok: z.literal(true),
    kind: z.enum(['a', 'b']),
    extra: z.string().optional(),
  })
  .meta({ id: 'ResponseSerializerTestSession' });

const answer = {
  // Keys out of the schema's order, and one the schema does not name: both writers drop and reorder alike.
  session: { amr: ['pwd'], id: 's1', expiresAt: '2026-11-30T04:00:00.000Z', authTime: '2026-11-30T03:00:00.000Z' },
  user: { id: 'u1', email: 'a"b@example.test', name: 'Zoë \u2028 <x>\n', roles: ['ADMIN'], passwordHash: 'never written' },
  claims: { org: { id: 'o1', slug: 'acme', roles: [] }, n: 1.5, nothing: null },
  note: null,
  count: 3,
  ok: true,
  kind: 'b',
};

const zodWrite = (schema: z.ZodType) => zodSerializerCompiler({ schema, method: 'GET', url: '/test' } as never) as (data: unknown) => string;

describe('compiled response writer', () => {
  it('writes exactly the bytes zod writes: key order, escaping, records, nullable, optional', () => {
    const compiled = compiledSerializer(session);
    assert.ok(compiled, 'plain data compiles');
    const expected = zodWrite(session)(answer);
    assert.equal(compiled(answer), expected);
    assert.ok(!expected.includes('passwordHash'));
    const withExtra = { ...answer, extra: 'x', note: 'n' };
    assert.equal(compiled(withExtra), zodWrite(session)(withExtra));
  });

  it('leaves to zod what fast-json-stringify would write differently', () => {
    // fast-json-stringify writes required properties first: an optional one before a required one would move.
    assert.equal(compiledSerializer(z.object({ a: z.string().optional(), b: z.string() })), null);
    assert.equal(compiledSerializer(z.object({ a: z.union([z.string(), z.number()]) })), null);
    assert.equal(compiledSerializer(z.object({ a: z.string().default('x') })), null);
    assert.equal(compiledSerializer(z.object({ at: z.date() })), null);
    assert.equal(compiledSerializer(z.object({ a: z.string().transform((s) => s.length) })), null);
    assert.equal(compiledSerializer('not a schema'), null);
    assert.deepEqual(plainJsonSchema({ anyOf: [{ type: 'string' }, { type: 'null' }] }), { type: ['string', 'null'] });
    assert.equal(plainJsonSchema({ anyOf: [{ type: 'string' }, { type: 'number' }] }), null);
  });

  it('under test (verify), zod still refuses a wrong answer; otherwise the compiled writer answers', () => {
    const route = { schema: session, method: 'GET', url: '/test', httpStatus: '200' } as never;
    const verified = createSerializerCompiler({ verify: true })(route);
    const fast = createSerializerCompiler({ verify: false })(route);
    assert.equal(verified(answer), zodWrite(session)(answer));
    assert.equal(fast(answer), zodWrite(session)(answer));
    assert.throws(() => verified({ ...answer, count: 'three' }), /serializ/i);
    const union = z.object({ a: z.union([z.string(), z.number()]) });
    assert.equal(createSerializerCompiler({ verify: false })({ schema: union, method: 'GET', url: '/u' } as never)({ a: 1 }), '{"a":1}');
  });
});
