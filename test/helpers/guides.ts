/**
 * The code of a guide as files: a guide shows a file in a fenced code block headed by a line that
 * is only the file's name in backticks and a colon ("`auth.ts`:", then a blank line, then the
 * block). Tests compare those blocks with an example's files, or run them as written.
 */
import { readFileSync } from 'node:fs';

/** Each file name the guide heads a block with, and the blocks under that name (in order). */
export function guideFiles(path: string): Map<string, string[]> {
  const files = new Map<string, string[]>();
  for (const match of readFileSync(path, 'utf8').matchAll(/^`([^`\s]+)`:\n\n```[a-z]*\n([\s\S]*?)^```$/gm)) {
    files.set(match[1]!, [...(files.get(match[1]!) ?? []), match[2]!]);
  }
  return files;
}

/** The one block the guide heads with `name`; throws when there is none or more than one. */
export function guideFile(path: string, name: string): string {
  const blocks = guideFiles(path).get(name) ?? [];
  if (blocks.length !== 1) throw new Error(`${path} shows ${blocks.length} blocks headed \`${name}\`:, not one`);
  return blocks[0]!;
}
