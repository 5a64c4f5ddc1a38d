/**
 * The file readers of `gatehouse import`, each a stream of entries with the line they start on, in
 * constant memory: JSON Lines (one entry per line), a JSON document's array of users (Firebase's
 * `auth:export`, Keycloak's realm export: the array is cut into its elements as the bytes arrive, never
 * parsed whole) and CSV (quoted fields with line breaks; each record parsed by csv-parse). An entry longer than
 * MAX_ENTRY_BYTES is refused by its line (`ROW_TOO_LARGE`) without being held, and the file goes on.
 */
import type { Readable } from 'node:stream';
import { parse as parseCsvRecord } from 'csv-parse/sync';

export const MAX_ENTRY_BYTES = 1024 * 1024;

export type Entry = { line: number; value: unknown } | { line: number; refused: 'ROW_TOO_LARGE' | 'INVALID_JSON' | 'INVALID_CSV' };

/** The bytes of one entry as they arrive, dropped (and remembered as too long) past MAX_ENTRY_BYTES. */
class EntryBytes {
  #parts: Buffer[] = [];
  #size = 0;
  #tooLong = false;
  get isEmpty(): boolean {
    return this.#size === 0 && !this.#tooLong;
  }
  add(piece: Buffer): void {
    if (this.#tooLong || piece.length === 0) return;
    this.#size += piece.length;
    if (this.#size > MAX_ENTRY_BYTES) {
      this.#tooLong = true;
      this.#parts = [];
    } else this.#parts.push(Buffer.from(piece));
  }
  /** The entry's text (null when it was too long), and a fresh start. */
  take(): string | null {
    const text = this.#tooLong ? null : Buffer.concat(this.#parts).toString('utf8');
    this.#parts = [];
    this.#size = 0;
    this.#tooLong = false;
    return text;
  }
}

/** JSON Lines: each non-blank line one JSON value. */
export async function* jsonLines(input: Readable): AsyncGenerator<Entry> {
  let line = 0;
  const bytes = new EntryBytes();
  const finish = (): Entry | null => {
    line++;
    const text = bytes.take();
    if (text === null) return { line, refused: 'ROW_TOO_LARGE' };
    if (text.trim() === '') return null;
    return parseJson(line, text);
  };
  for await (const chunk of input as AsyncIterable<Buffer>) {
    let start = 0;
    for (let newline = chunk.indexOf(10, start); newline >= 0; newline = chunk.indexOf(10, start)) {
      bytes.add(chunk.subarray(start, newline));
      const entry = finish();
      if (entry !== null) yield entry;
      start = newline + 1;
    }
    bytes.add(chunk.subarray(start));
  }
  if (!bytes.isEmpty) {
    const entry = finish();
    if (entry !== null) yield entry;
  }
}

function parseJson(line: number, text: string): Entry {
  try {
    return { line, value: JSON.parse(text) };
  } catch {
    return { line, refused: 'INVALID_JSON' };
  }
}

/**
 * The elements of the array under the top-level key `key` (`users`) of one JSON object, one at a
 * time: a scanner that follows strings and nesting depth, and parses each element alone.
 */
export async function* jsonArrayOf(input: Readable, key: string): AsyncGenerator<Entry> {
  const wanted = JSON.stringify(key);
  let line = 1;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let lastKey = '';
  let keyText: string[] | null = null;
  let inArray = false;
  const element = new EntryBytes();
  let elementLine = 0;
  let elementStart = -1;
  for await (const chunk of input as AsyncIterable<Buffer>) {
    elementStart = inArray && depth >= 3 ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      if (byte === 10) line++;
      if (inString) {
        if (keyText !== null && !(byte === 0x22 && !escaped)) keyText.push(String.fromCharCode(byte));
        if (escaped) escaped = false;
        else if (byte === 0x5c) escaped = true;
        else if (byte === 0x22) {
          inString = false;
          if (keyText !== null) {
            lastKey = `"${keyText.join('')}"`;
            keyText = null;
          }
        }
        continue;
      }
      if (byte === 0x22) {
        inString = true;
        if (depth === 1 && !inArray) keyText = [];
        continue;
      }
      if (byte === 0x7b || byte === 0x5b) {
        depth++;
        if (depth === 2 && byte === 0x5b && lastKey === wanted && !inArray) inArray = true;
        else if (inArray && depth === 3) {
          elementStart = i;
          elementLine = line;
        }
      } else if (byte === 0x7d || byte === 0x5d) {
        depth--;
        if (inArray && depth === 2) {
          element.add(chunk.subarray(elementStart, i + 1));
          elementStart = -1;
          const text = element.take();
          yield text === null ? { line: elementLine, refused: 'ROW_TOO_LARGE' } : parseJson(elementLine, text);
        } else if (inArray && depth === 1) inArray = false;
      }
    }
    if (elementStart >= 0) element.add(chunk.subarray(elementStart));
  }
}


/**
 * CSV with a header row: each record an object by column name. Records are cut here (a line break
 * outside quotes ends one; `""` inside quotes is a quote), so that one over the limit is skipped
 * without losing the records after it; each is then parsed alone by csv-parse.
 */
export async function* csvRecords(input: Readable): AsyncGenerator<Entry> {
  let header: string[] | null = null;
  for await (const record of csvRecordTexts(input)) {
    if (record.text === null) {
      yield { line: record.line, refused: 'ROW_TOO_LARGE' };
      continue;
    }
    const text: string = header === null ? record.text.replace(/^\uFEFF/, '') : record.text;
    if (text.trim() === '') continue;
    let fields: string[] | undefined;
    try {
      fields = (parseCsvRecord(text, { relax_column_count: true }) as string[][])[0];
    } catch {
      fields = undefined;
    }
    if (header === null) {
      if (fields === undefined) {
        yield { line: record.line, refused: 'INVALID_CSV' };
        return;
      }
      header = fields;
      continue;
    }
    if (fields === undefined || fields.length !== header.length) {
      yield { line: record.line, refused: 'INVALID_CSV' };
      continue;
    }
    const values = fields;
    yield { line: record.line, value: Object.fromEntries(header.map((name, index) => [name, values[index]])) };
  }
}

/** The text of each CSV record with the line it starts on; null text for one over MAX_ENTRY_BYTES. */
async function* csvRecordTexts(input: Readable): AsyncGenerator<{ line: number; text: string | null }> {
  let line = 1;
  let start = 1;
  let inQuotes = false;
  const bytes = new EntryBytes();
  for await (const chunk of input as AsyncIterable<Buffer>) {
    let from = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      if (byte === 0x22) inQuotes = !inQuotes;
      else if (byte === 10) {
        line++;
        if (!inQuotes) {
          bytes.add(chunk.subarray(from, i));
          yield { line: start, text: bytes.take() };
          from = i + 1;
          start = line;
        }
      }
    }
    bytes.add(chunk.subarray(from));
  }
  if (!bytes.isEmpty) yield { line: start, text: bytes.take() };
}
