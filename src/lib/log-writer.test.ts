/**
 * The log writer on a real pipe (a child process's standard output): lines logged in one turn of
 * the event loop go out together and in order, and what is still waiting when the process exits
 * is written, not lost. (A reader that never reads, or has gone, is test/faults/log-reader.test.ts.)
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';

const WRITER = new URL('./log-writer.ts', import.meta.url).href;

/** Runs `body` in a child whose stdout is a pipe; resolves with what it wrote, chunk by chunk. */
async function inChild(body: string): Promise<{ chunks: string[]; code: number | null }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', `import { createLogWriter } from ${JSON.stringify(WRITER)};\nconst writer = createLogWriter(1);\n${body}`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const chunks: string[] = [];
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => chunks.push(chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  return { chunks, code };
}

describe('log writer on a pipe', () => {
  it('writes the lines of one turn as one write, in order', async () => {
    const { chunks, code } = await inChild(`
      for (let i = 0; i < 200; i++) writer.write(JSON.stringify({ i }) + '\\n');
      if (writer.buffered === 0) throw new Error('the lines should wait for the end of the turn');
      setTimeout(() => {}, 50);
    `);
    assert.equal(code, 0);
    const lines = chunks.join('').trimEnd().split('\n');
    assert.deepEqual(lines.map((line) => (JSON.parse(line) as { i: number }).i), Array.from({ length: 200 }, (_, i) => i));
    assert.equal(chunks.length, 1, 'one write for the turn');
  });

  it('writes what is waiting when the process exits at once', async () => {
    const { chunks, code } = await inChild(`
      for (let i = 0; i < 100; i++) writer.write('line ' + i + '\\n');
      writer.write('last words\\n');
      process.exit(3);
    `);
    assert.equal(code, 3);
    const lines = chunks.join('').trimEnd().split('\n');
    assert.equal(lines.length, 101);
    assert.equal(lines.at(-1), 'last words');
  });
});
