import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { http, https } from './node-http.ts';

const SRC = join(import.meta.dirname, '..');

/** Every TypeScript file the server may load: tests and their helpers aside. */
function serverSources(): string[] {
  return (readdirSync(SRC, { recursive: true }) as string[])
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && !/(^|\/)[^/]*test[^/]*$/.test(file))
    .map((file) => join(SRC, file));
}

describe('node-http', () => {
  it('gives the built-in modules themselves', async () => {
    const { default: imported } = await import('node:http');
    assert.equal(http, imported);
    assert.equal(typeof https.request, 'function');
  });

  it('is how server code reaches node:http and node:https (an import of either loads undici, about 16 MB)', () => {
    const offenders = serverSources().filter((file) => /^\s*import\s+(?!type\b)[^;]*?from\s+['"](node:)?https?['"]/m.test(readFileSync(file, 'utf8')));
    assert.deepEqual(offenders.map((file) => relative(SRC, file)), []);
  });
});
