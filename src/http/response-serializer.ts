/**
 * How JSON answers are written. Routes declare their responses as zod schemas (the OpenAPI
 * document is made from them); fastify-type-provider-zod's serializer runs the schema over every
 * answer (`safeEncode`, the ISO-date regexes included) and then `JSON.stringify`s the copy it makes:
 * on a fast route that is a few per cent of the request (perf/analysis.md).
 *
 * Here a response schema whose JSON Schema is plain data (objects, arrays, strings, numbers,
 * booleans, enums, nullable types, records, unknown values) is compiled once, on its first answer,
 * by fast-json-stringify (Fastify's own serializer): the same bytes, in the schema's key order,
 * without validating or copying. A schema with anything else (unions, defaults, transforms,
 * refs) keeps zod's serializer. With `verify` (NODE_ENV=test) every answer is written both ways:
 * zod's validation still refuses a wrong answer, and a compiled answer that differs by one byte
 * fails the request, so every test that calls a route checks the compiled writer.
 */
import fastJsonStringify from 'fast-json-stringify';
import { z } from 'zod';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import type { FastifySerializerCompiler } from 'fastify/types/schema.js';

type JsonSchema = Record<string, unknown>;
type Serialize = (data: unknown) => string;
type ZodCompilerInput = Parameters<typeof zodSerializerCompiler>[0];

/** Keywords fast-json-stringify writes exactly as JSON.stringify would the zod-encoded value; or ignores. */
const PLAIN_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'propertyNames',
  'description',
  'title',
  'examples',
  'deprecated',
]);
const PLAIN_TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']);

/**
 * The schema fast-json-stringify is given, or null when it is not plain data. `anyOf [X, null]`
 * (zod's `.nullable()`) becomes `type: [X's type, 'null']`, which fast-json-stringify writes
 * without a validator. The key order of `properties` is the zod shape's: the order zod writes.
 */
export function plainJsonSchema(schema: unknown): JsonSchema | null {
  if (schema === true || (typeof schema === 'object' && schema !== null && Object.keys(schema).length === 0)) return {};
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return null;
  const source = schema as JsonSchema;
  if (Array.isArray(source.anyOf) && Object.keys(source).every((key) => key === 'anyOf' || key === 'description')) {
    const branches = source.anyOf as unknown[];
    const nullIndex = branches.findIndex((branch) => isNullSchema(branch));
    if (branches.length !== 2 || nullIndex === -1) return null;
    const other = plainJsonSchema(branches[1 - nullIndex]);
    if (other === null || typeof other.type !== 'string' || other.type === 'null' || 'enum' in other || 'const' in other) return null;
    return { ...other, type: [other.type, 'null'] };
  }
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(source)) {
    if (key === '$schema') continue;
    if (!PLAIN_KEYWORDS.has(key)) return null;
    if (key === 'type') {
      // One type, or a nullable one (`['string', 'null']`: what draft 7 makes of `.nullable()`).
      const types = Array.isArray(value) ? (value as unknown[]) : [value];
      if (types.length === 0 || types.length > 2 || !types.every((type) => typeof type === 'string' && PLAIN_TYPES.has(type))) return null;
      if (types.length === 2 && (!types.includes('null') || types[0] === types[1])) return null;
      out.type = value;
    } else if (key === 'properties') {
      const properties: JsonSchema = {};
      for (const [name, child] of Object.entries(value as JsonSchema)) {
        const plain = plainJsonSchema(child);
        if (plain === null) return null;
        properties[name] = plain;
      }
      out.properties = properties;
    } else if (key === 'items' || key === 'additionalProperties') {
      if (value === false) out[key] = false;
      else {
        const plain = plainJsonSchema(value);
        if (plain === null) return null;
        out[key] = plain;
      }
    } else if (key === 'propertyNames') {
      // A record's keys: zod's string keys are written as JSON.stringify writes them.
      if (!isStringSchema(value)) return null;
    } else if (key === 'enum' || key === 'const') {
      const values = key === 'enum' ? (value as unknown[]) : [value];
      if (!values.every((item) => typeof item === 'string' || typeof item === 'number' || typeof item === 'boolean' || item === null)) return null;
      out[key] = value;
    } else out[key] = value;
  }
  // fast-json-stringify needs the type to write an object or array by its schema.
  if (out.type === undefined && Object.keys(out).some((key) => key !== 'description' && key !== 'title')) return null;
  if (out.type === 'object' && out.additionalProperties === undefined) out.additionalProperties = false;
  if (out.properties !== undefined && !requiredComeFirst(out)) return null;
  return out;
}

/**
 * fast-json-stringify writes an object's required properties before its optional ones; zod writes
 * the shape's order. The two agree when no required property follows an optional one.
 */
function requiredComeFirst(schema: JsonSchema): boolean {
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  let seenOptional = false;
  for (const name of Object.keys(schema.properties as JsonSchema)) {
    if (!required.has(name)) seenOptional = true;
    else if (seenOptional) return false;
  }
  return true;
}

function isNullSchema(schema: unknown): boolean {
  return typeof schema === 'object' && schema !== null && (schema as JsonSchema).type === 'null' && Object.keys(schema).length === 1;
}

function isStringSchema(schema: unknown): boolean {
  return typeof schema === 'object' && schema !== null && (schema as JsonSchema).type === 'string' && Object.keys(schema).length === 1;
}

/** The JSON Schema of what a route answers (zod's output side), ids and descriptions left out. */
function outputJsonSchema(schema: z.ZodType): unknown {
  try {
    return z.toJSONSchema(schema, { io: 'output', target: 'draft-7', unrepresentable: 'throw', reused: 'inline', cycles: 'throw', metadata: z.registry() });
  } catch {
    return null;
  }
}

/** fast-json-stringify's writer of a zod schema, or null when it would not write what zod writes. */
export function compiledSerializer(schema: unknown): Serialize | null {
  if (!(schema instanceof z.ZodType)) return null;
  const plain = plainJsonSchema(outputJsonSchema(schema));
  if (plain === null || plain.type === undefined) return null;
  try {
    return fastJsonStringify(plain as unknown as Parameters<typeof fastJsonStringify>[0]) as Serialize;
  } catch {
    return null;
  }
}

export class ResponseWriterMismatch extends Error {}

/**
 * Fastify's serializer compiler for the app. Each route's writer is made on its first answer, so
 * a start compiles nothing it does not use.
 */
export function createSerializerCompiler(options: { readonly verify: boolean }): FastifySerializerCompiler<unknown> {
  return (input) => {
    const route = input as unknown as ZodCompilerInput;
    let zodWriter: Serialize | null = null;
    const zod = () => (zodWriter ??= zodSerializerCompiler(route) as Serialize);
    let compiled: Serialize | null | undefined;
    return (data: unknown) => {
      compiled ??= compiledSerializer(resolveSchema(route.schema));
      if (compiled === null) return zod()(data);
      if (!options.verify) return compiled(data);
      const expected = zod()(data);
      const written = compiled(data);
      if (written !== expected) throw new ResponseWriterMismatch(`${route.method} ${route.url}: the compiled response writer wrote ${written}, zod ${expected}`);
      return written;
    };
  };
}

/** fastify-type-provider-zod accepts a schema or `{ properties: schema }`. */
function resolveSchema(schema: unknown): unknown {
  if (schema instanceof z.ZodType) return schema;
  if (typeof schema === 'object' && schema !== null && 'properties' in schema && (schema as { properties: unknown }).properties instanceof z.ZodType) {
    return (schema as { properties: unknown }).properties;
  }
  return null;
}
