/**
 * The readers hold one entry at a time: a JSON document's `users` array is cut into its elements
 * whatever the chunking (strings with braces and escaped quotes, nested arrays), an entry over the
 * limit is refused by its line without stopping, and CSV keeps quoted fields with line breaks.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { csvRecords, jsonArrayOf, jsonLines, MAX_ENTRY_BYTES, type Entry } from './readers.ts';

async function all(entries: AsyncGenerator<Entry>): Promise<Entry[]> {
  const out: Entry[] = [];
  for await (const entry of entries) out.push(entry);
  return out;
}

/** The text in chunks of `size` bytes. */
function chunked(text: string, size: number): Readable {
  const bytes = Buffer.from(text);
  return Readable.from(Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size)));
}

describe('import readers', () => {
  const document = `{
  "realm": "users",
  "roles": {"realm": [{"name": "x"}]},
  "users": [
    {"email": "a@example.com", "note": "} ] { [ \\" \\\\", "credentials": [{"type": "password"}]},
    {"email": "b@example.com", "realmRoles": ["a", "b"]}
  ],
  "after": [{"email": "not a user"}]
}`;

  for (const size of [1, 7, 64, 100_000]) {
    it(`a document's users array, in chunks of ${size} bytes`, async () => {
      const entries = await all(jsonArrayOf(chunked(document, size), 'users'));
      assert.deepEqual(entries, [
        { line: 5, value: { email: 'a@example.com', note: '} ] { [ " \\', credentials: [{ type: 'password' }] } },
        { line: 6, value: { email: 'b@example.com', realmRoles: ['a', 'b'] } },
      ]);
    });
  }

  it('an element or a line over the limit is refused by its line; the rest is read', async () => {
    const huge = 'x'.repeat(MAX_ENTRY_BYTES + 10);
    const array = await all(jsonArrayOf(chunked(`{"users":[\n{"email":"${huge}"},\n{"email":"c@example.com"}]}`, 65_536), 'users'));
    assert.deepEqual(array, [{ line: 2, refused: 'ROW_TOO_LARGE' }, { line: 3, value: { email: 'c@example.com' } }]);
    const lines = await all(jsonLines(chunked(`{"email":"${huge}"}\n\n{"email":"d@example.com"}\n{oops`, 65_536)));
    assert.deepEqual(lines, [{ line: 1, refused: 'ROW_TOO_LARGE' }, { line: 3, value: { email: 'd@example.com' } }, { line: 4, refused: 'INVALID_JSON' }]);
  });

  it('CSV: quoted fields with commas and line breaks; a malformed record is refused, the rest read', async () => {
    const huge = `"${'x'.repeat(MAX_ENTRY_BYTES)}\n"`;
    const text = `\uFEFFemail,name\na@example.com,"Doe, Jane\nSecond line"\nb@example.com,one,too many\nc@example.com,C\nhuge@example.com,${huge}\nd@example.com,"D ""quoted"""\r\n`;
    const entries = await all(csvRecords(chunked(text, 4096)));
    assert.deepEqual(await all(csvRecords(chunked(text.slice(0, text.indexOf('c@example.com')), 5))), entries.slice(0, 2), 'the same in 5-byte chunks');
    assert.deepEqual(
      entries.sort((a, b) => a.line - b.line),
      [
        { line: 2, value: { email: 'a@example.com', name: 'Doe, Jane\nSecond line' } },
        { line: 4, refused: 'INVALID_CSV' },
        { line: 5, value: { email: 'c@example.com', name: 'C' } },
        { line: 6, refused: 'ROW_TOO_LARGE' },
        { line: 8, value: { email: 'd@example.com', name: 'D "quoted"' } },
      ],
    );
  });
});
