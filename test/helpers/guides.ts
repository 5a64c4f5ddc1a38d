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

/** A command line split as a POSIX shell splits this simple kind: on blanks, outside '…' and "…". */
function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) words.push(match[1] ?? match[2] ?? match[3]!);
  return words;
}

/**
 * The arguments of the one `npx gatehouse <prefix> …` command in a page's `sh` blocks (a guide's or
 * a README's, indented or not), continuation lines joined and quotes removed, without
 * `npx gatehouse`: what to give the CLI to run it as written.
 */
export function gatehouseCommand(path: string, prefix: string): string[] {
  const commands: string[][] = [];
  let inShell = false;
  let pending = '';
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    const line = raw.trim();
    if (line.startsWith('```')) {
      inShell = !inShell && line === '```sh';
      pending = '';
      continue;
    }
    if (!inShell) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const command = pending + line;
    pending = '';
    if (command.startsWith(`npx gatehouse ${prefix} `)) commands.push(shellWords(command).slice(2));
  }
  if (commands.length !== 1) throw new Error(`${path} has ${commands.length} \`npx gatehouse ${prefix}\` commands, not one`);
  return commands[0]!;
}
