/**
 * The install step that fills Node's compile cache (scripts/warm-compile-cache.js, which `npm
 * install` and `npm ci` run from the `prepare` script): after it, the first `gatehouse` command and
 * the first `npm start` find every TypeScript file they load already stripped and compiled. Judged
 * from Node's own account of its cache (NODE_DEBUG_NATIVE=COMPILE_CACHE prints, on standard error,
 * each file it writes to the cache: a file written is one the run had to strip and compile).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { serverEntry } from '../src/start.js';
import { randomSecret, REPO_ROOT, runNode, SERVER_ENTRY, startNode, startScriptNodeArgs, freePort, LISTENING_MESSAGE, type ChildEnv } from './helpers/process.ts';

const WARM_SCRIPT = resolve(REPO_ROOT, 'scripts/warm-compile-cache.js');
const BIN = resolve(REPO_ROOT, JSON.parse(readFileSync(resolve(REPO_ROOT, 'package.json'), 'utf8')).bin.gatehouse as string);
const TIMEOUT_MS = 60_000;

/** The TypeScript files a run wrote to the cache: those it found missing there. */
function typeScriptWritten(stderr: string): string[] {
  return [...stderr.matchAll(/\[compile cache\] writing cache for \w+ (file:\/\/\S+\.ts)\b/g)].map((match) => match[1]!);
}

/** The server's bundled files (dist/server/, scripts/build-server.js) whose compiled code a run found in the cache, and those it did not. */
function bundleFromCache(stderr: string): { found: number; missing: string[] } {
  const found = [...stderr.matchAll(/\[compile cache\] V8 code cache for ESM file:\/\/\S+\/dist\/server\/\S+\.js was accepted/g)].length;
  const missing = [...stderr.matchAll(/\[compile cache\] V8 code cache for ESM (file:\/\/\S+\/dist\/server\/\S+\.js) was (?:not initialized|rejected)/g)].map((match) => match[1]!);
  return { found, missing };
}

/** How many TypeScript files a run took, stripped, from the cache. */
function typeScriptRead(stderr: string): number {
  return [...stderr.matchAll(/\[compile cache\] retrieving transpile cache for StrippedTypeScript \S+\.ts\.\.\.success/g)].length;
}

describe('the install step fills the compile cache', () => {
  let scratch: string;
  let env: (cache: string) => ChildEnv;
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'gatehouse-compile-cache-'));
    const secret = randomSecret();
    env = (cache) => ({ NODE_ENV: 'development', AUTH_SECRET: secret, DATA_DIR: scratch, DATABASE_URL: `sqlite:${join(scratch, 'gatehouse.db')}`, NODE_COMPILE_CACHE: cache });
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  const freshCache = () => mkdtempSync(join(scratch, 'cache-'));
  const usersList = (cache: string) => runNode([BIN, 'users', 'list', '--json'], { env: { ...env(cache), NODE_DEBUG_NATIVE: 'COMPILE_CACHE' }, timeoutMs: TIMEOUT_MS, cwd: scratch });

  it('without it, a first command strips and compiles what it loads (what the step saves)', async () => {
    const run = await usersList(freshCache());
    assert.equal(run.code, 0, run.stderr.slice(-2000));
    assert.ok(typeScriptWritten(run.stderr).length > 100, `a cold run writes its TypeScript to the cache (${typeScriptWritten(run.stderr).length} files)`);
  });

  it('after it, `gatehouse users list` loads every TypeScript file from the cache', async () => {
    const cache = freshCache();
    const warm = await runNode([WARM_SCRIPT], { env: env(cache), timeoutMs: TIMEOUT_MS, cwd: scratch });
    assert.equal(warm.code, 0, warm.stderr);
    assert.match(warm.stderr, /^gatehouse: compile cache filled in \d+ ms\n$/);
    const run = await usersList(cache);
    assert.equal(run.code, 0, run.stderr.slice(-2000));
    assert.ok(Array.isArray((JSON.parse(run.stdout) as { users: unknown }).users), 'the command did its job');
    assert.deepEqual(typeScriptWritten(run.stderr), [], 'nothing left to strip');
    assert.ok(typeScriptRead(run.stderr) > 100, `the modules came from the cache (${typeScriptRead(run.stderr)} files)`);
  });

  it('after it, the server starts without stripping any TypeScript, its compiled code from the cache', async (t) => {
    const cache = freshCache();
    const runsFrom = serverEntry().endsWith('.ts') ? 'source' : 'bundle';
    const warm = await runNode([WARM_SCRIPT], { env: env(cache), timeoutMs: TIMEOUT_MS, cwd: scratch });
    assert.equal(warm.code, 0, warm.stderr);
    const port = await freePort();
    const server = startNode([...startScriptNodeArgs(), SERVER_ENTRY], {
      env: { ...env(cache), NODE_DEBUG_NATIVE: 'COMPILE_CACHE', PORT: String(port), HOST: '127.0.0.1', AUTH_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'info' },
      cwd: scratch,
      deadlineMs: TIMEOUT_MS,
      cleanup: (fn) => t.after(fn),
    });
    const listening = await server.waitForLog((entry) => entry.msg === LISTENING_MESSAGE, TIMEOUT_MS);
    const exit = await server.stop(TIMEOUT_MS);
    assert.equal(exit.code, 0, server.stderr().slice(-2000));
    assert.deepEqual(typeScriptWritten(server.stderr()), [], 'nothing left to strip');
    assert.equal(listening.runsFrom, runsFrom, 'the server ran what src/start.js chose when the cache was filled');
    if (runsFrom === 'bundle') {
      // What `npm test` and `npm install` give: the bundle, built before the tests, compiled by the install step.
      assert.equal(typeScriptRead(server.stderr()), 0, 'no TypeScript loaded: the server ran its bundle');
      const bundle = bundleFromCache(server.stderr());
      assert.deepEqual(bundle.missing, [], 'every bundled file the start loads was compiled by the install step');
      assert.ok(bundle.found > 10, `the bundle came from the cache (${bundle.found} files)`);
    } else {
      // A source file edited since the last build: the server runs the source, stripped by the install step.
      assert.ok(typeScriptRead(server.stderr()) > 100, `the modules came from the cache (${typeScriptRead(server.stderr())} files)`);
    }
  });

  it('turned off (NODE_DISABLE_COMPILE_CACHE=1), it writes nothing and does not fail', async () => {
    const cache = freshCache();
    const warm = await runNode([WARM_SCRIPT], { env: { ...env(cache), NODE_DISABLE_COMPILE_CACHE: '1' }, timeoutMs: TIMEOUT_MS, cwd: scratch });
    assert.equal(warm.code, 0, warm.stderr);
    assert.equal(warm.stderr, '');
  });
});
