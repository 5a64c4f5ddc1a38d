/**
 * The file readers of `gatehouse import`, each a stream of entries with the line they start on, in
 * constant memory: JSON Lines (one entry per line), a JSON document's array of users (Firebase's
 * `auth:export`, Keycloak's realm export: the array is cut into its elements as the bytes arrive, never
 * parsed whole) and CSV (csv-parse, quoted fields with line breaks). An entry longer than
 * MAX_ENTRY_BYTES is refused by its line (`ROW_TOO_LARGE`) without being held, and the file goes on.
 */
import type { Readable } from 'node:stream';
import { parse as parseCsv } from 'csv-parse';

export const MAX_ENTRY_BYTES = 1024 * 1024;

export type Entry = { line: number; value: unknown } | { line: number; refused: 'ROW_TOO_LARGE' | 'INVALID_JSON' | 'INVALID_CSV' };

/** JSON Lines: each non-blank line one JSON value. */
export async function* jsonLines(input: Readable): AsyncGenerator<Entry> {
  let line = 0;
  let parts: Buffer[] = [];
  let size = 0;
  let tooLong = false;
  const finish = (): Entry | null => {
    line++;
    const text = tooLong ? '' : Buffer.concat(parts).toString('utf8');
    const wasTooLong = tooLong;
    parts = [];
    size = 0;
    tooLong = false;
    if (wasTooLong) return { line, refused: 'ROW_TOO_LARGE' };
    if (text.trim() === '') return null;
    try {
      return { line, value: JSON.parse(text) };
    } catch {
      return { line, refused: 'INVALID_JSON' };
    }
  };
  for await (const chunk of input as AsyncIterable<Buffer>) {
    let start = 0;
    for (let newline = chunk.indexOf(10, start); newline >= 0; newline = chunk.indexOf(10, start)) {
      take(chunk.subarray(start, newline));
      const entry = finish();
      if (entry !== null) yield entry;
      start = newline + 1;
    }
    take(chunk.subarray(start));
  }
  if (size > 0 || tooLong) {
    const entry = finish();
    if (entry !== null) yield entry;
  }

  function take(piece: Buffer) {
    if (tooLong || piece.length === 0) return;
    size += piece.length;
    if (size > MAX_ENTRY_BYTES) {
      tooLong = true;
      parts = [];
    } else parts.push(Buffer.from(piece));
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
  let element: Buffer[] = [];
  let elementSize = 0;
  let elementLine = 0;
  let elementStart = -1;
  let tooLong = false;
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
          element = [];
          elementSize = 0;
          tooLong = false;
        }
      } else if (byte === 0x7d || byte === 0x5d) {
        depth--;
        if (inArray && depth === 2) {
          keep(chunk.subarray(elementStart, i + 1));
          elementStart = -1;
          yield emit();
        } else if (inArray && depth === 1) inArray = false;
      }
    }
    if (elementStart >= 0) keep(chunk.subarray(elementStart));
  }

  function keep(piece: Buffer) {
    if (tooLong) return;
    elementSize += piece.length;
    if (elementSize > MAX_ENTRY_BYTES) {
      tooLong = true;
      element = [];
    } else element.push(Buffer.from(piece));
  }
  function emit(): Entry {
    if (tooLong) return { line: elementLine, refused: 'ROW_TOO_LARGE' };
    try {
      return { line: elementLine, value: JSON.parse(Buffer.concat(element).toString('utf8')) };
    } catch {
      return { line: elementLine, refused: 'INVALID_JSON' };
    }
  }
}

/** CSV with a header row: each record an object by column name. */
export async function* csvRecords(input: Readable): AsyncGenerator<Entry> {
  const skipped: Entry[] = [];
  const parser = input.pipe(
    parseCsv({ columns: true, bom: true, skip_empty_lines: true, relax_column_count: false, max_record_size: MAX_ENTRY_BYTES, skip_records_with_error: true, info: true }),
  );
  parser.on('skip', (error: { lines?: number; code?: string }) => {
    skipped.push({ line: error.lines ?? 0, refused: error.code === 'CSV_MAX_RECORD_SIZE' ? 'ROW_TOO_LARGE' : 'INVALID_CSV' });
  });
  for await (const { record, info } of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number } }>) {
    while (skipped.length > 0) yield skipped.shift()!;
    yield { line: info.lines, value: record };
  }
  while (skipped.length > 0) yield skipped.shift()!;
}
