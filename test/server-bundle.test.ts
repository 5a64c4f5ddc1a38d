/**
 * The server `npm start` runs (scripts/build-server.js, src/start.js `serverEntry`): Gatehouse's
 * own source bundled into dist/server/, run while every file it was built from is unchanged, and
 * the source otherwise; a WORKERS cluster's workers run what the primary chose. The build is run
 * here as the install step runs it; the server started from it (by `npm start`'s entry and by
 * `gatehouse serve`) serves pages (templates read from src/ through the rewritten `import.meta`),
 * sign-up (the password-strength worker) and its API, and says in its start line what it runs.
 */
import { describe, it } from 'node:test';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUNDLE_DIRECTORY, BUNDLE_MANIFEST, BUNDLE_MANIFEST_VERSION, serverEntry, START_NODE_FLAGS } from '../src/start.js';
import { KEEP_RETIRED_MS, previousBuild, removeOldBuilds } from '../scripts/build-server.js';
import { freePort, LISTENING_MESSAGE, randomSecret, REPO_ROOT, runNode, startGatehouse, startNode, startScriptNodeArgs } from './helpers/process.ts';

interface Manifest {
  version: number;
  entry: string;
  previous?: string;
  chunks: Record<string, string>;
  inputs: Record<string, { size: number; mtimeMs: number }>;
}

const readManifest = (root = REPO_ROOT): Manifest => JSON.parse(readFileSync(join(root, BUNDLE_DIRECTORY, BUNDLE_MANIFEST), 'utf8')) as Manifest;

describe('which server src/start.js runs', () => {
  /** A project with one source file and a bundle built from it as it is now. */
  function project(t: { after(fn: () => void): void }) {
    const root = mkdtempSync(join(tmpdir(), 'gatehouse-bundle-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    mkdirSync(join(root, 'src'));
    mkdirSync(join(root, BUNDLE_DIRECTORY, 'b1'), { recursive: true });
    writeFileSync(join(root, BUNDLE_DIRECTORY, 'b1', 'main.js'), '');
    writeFileSync(join(root, 'src', 'main.ts'), 'export const a = 1;\n');
    const manifest = (inputs: Record<string, { size: number; mtimeMs: number }>, version = BUNDLE_MANIFEST_VERSION) =>
      writeFileSync(join(root, BUNDLE_DIRECTORY, BUNDLE_MANIFEST), JSON.stringify({ version, entry: 'b1/main.js', chunks: {}, inputs }));
    const stamp = (file: string) => {
      utimesSync(join(root, file), 1_700_000_000, 1_700_000_000);
      return { size: readFileSync(join(root, file)).length, mtimeMs: 1_700_000_000_000 };
    };
    return { root, manifest, stamp, bundle: pathToFileURL(join(root, BUNDLE_DIRECTORY, 'b1', 'main.js')).href, source: pathToFileURL(join(root, 'src', 'main.ts')).href };
  }

  it('the bundle while every file it was built from is as it was; the source after any change', (t) => {
    const { root, manifest, stamp, bundle, source } = project(t);
    assert.equal(serverEntry(root, {}), source, 'no manifest: the source');
    manifest({ 'src/main.ts': stamp('src/main.ts') });
    assert.equal(serverEntry(root, {}), bundle);
    assert.equal(serverEntry(root, { GATEHOUSE_FROM_SOURCE: '1' }), source, 'GATEHOUSE_FROM_SOURCE=1 runs the source');
    // Edited since: same size, a new time.
    writeFileSync(join(root, 'src', 'main.ts'), 'export const a = 2;\n');
    assert.equal(serverEntry(root, {}), source, 'an edited file');
    manifest({ 'src/main.ts': stamp('src/main.ts') });
    assert.equal(serverEntry(root, {}), bundle);
    // Same time, another size.
    writeFileSync(join(root, 'src', 'main.ts'), 'export const a = 20;\n');
    utimesSync(join(root, 'src', 'main.ts'), 1_700_000_000, 1_700_000_000);
    assert.equal(serverEntry(root, {}), source, 'a file of another size');
    manifest({ 'src/main.ts': stamp('src/main.ts'), 'src/gone.ts': { size: 1, mtimeMs: 1 } });
    assert.equal(serverEntry(root, {}), source, 'a file the bundle was built from is gone');
    manifest({ 'src/main.ts': stamp('src/main.ts') });
    rmSync(join(root, BUNDLE_DIRECTORY, 'b1', 'main.js'));
    assert.equal(serverEntry(root, {}), source, 'the bundle\'s entry is gone');
    writeFileSync(join(root, BUNDLE_DIRECTORY, 'b1', 'main.js'), '');
    writeFileSync(join(root, BUNDLE_DIRECTORY, BUNDLE_MANIFEST), JSON.stringify({ version: BUNDLE_MANIFEST_VERSION, entry: 'b1/main.js', chunks: {}, inputs: null }));
    assert.equal(serverEntry(root, {}), source, 'a manifest without its inputs');
    manifest({ 'src/main.ts': stamp('src/main.ts') }, BUNDLE_MANIFEST_VERSION + 1);
    assert.equal(serverEntry(root, {}), source, 'a manifest of another version');
    writeFileSync(join(root, BUNDLE_DIRECTORY, BUNDLE_MANIFEST), '{"version":');
    assert.equal(serverEntry(root, {}), source, 'a manifest cut off');
  });
});

describe('the build folders kept', () => {
  it('are the current one, the one before it (also when the same source is built again) and any retired within a day', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bundle-builds-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const now = Date.now();
    const at = (name: string, retiredMsAgo: number, isFolder = true) => {
      if (isFolder) mkdirSync(join(dir, name));
      else writeFileSync(join(dir, name), '');
      const time = new Date(now - retiredMsAgo);
      utimesSync(join(dir, name), time, time);
    };
    const day = KEEP_RETIRED_MS;
    at('oldest', 3 * day);
    at('before', 2 * day); // the previous build: a running instance may still load from it
    at('current', 0);
    at('recent', day / 24);
    at('.building-123', 2 * day); // a build cut off
    at(`${BUNDLE_MANIFEST}.123.tmp`, 2 * day, false);
    at(BUNDLE_MANIFEST, 2 * day, false);
    assert.equal(previousBuild({ current: 'before', previous: 'oldest' }, 'current'), 'before', 'a new build: the one current until now');
    assert.equal(previousBuild({ current: 'current', previous: 'before' }, 'current'), 'before', 'the same source built again: the one before stays');
    assert.equal(previousBuild({ current: undefined, previous: undefined }, 'current'), undefined);
    removeOldBuilds(dir, ['current', 'before'], now);
    assert.deepEqual(readdirSync(dir).sort(), [BUNDLE_MANIFEST, 'before', 'current', 'recent'].sort());
  });
});

describe('a WORKERS cluster', () => {
  it('runs, in every worker it forks, what its primary chose (the current choice when that is gone)', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bundle-cluster-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const script = join(dir, 'cluster.mjs');
    const chosen = pathToFileURL(join(dir, 'chosen-by-the-primary.js')).href;
    writeFileSync(join(dir, 'chosen-by-the-primary.js'), '');
    // The primary chooses; then (as if a build had finished since) its choice differs from what a
    // fresh check gives; then (as if its build folder had been removed) it is gone.
    writeFileSync(script, `
      import cluster from 'node:cluster';
      import { processServerEntry } from ${JSON.stringify(pathToFileURL(resolve(REPO_ROOT, 'src/start.js')).href)};
      const ask = (env) => new Promise((resolve) => cluster.fork(env).on('message', resolve));
      if (cluster.isPrimary) {
        const primary = processServerEntry();
        const kept = await ask({ GATEHOUSE_SERVER_ENTRY: ${JSON.stringify(chosen)} });
        const gone = await ask({ GATEHOUSE_SERVER_ENTRY: ${JSON.stringify(`${chosen}.gone`)} });
        console.log(JSON.stringify({ primary, kept, gone }));
        process.exit(0);
      } else {
        process.send(processServerEntry(), () => process.exit(0));
      }
    `);
    const run = await runNode([script], { env: {}, timeoutMs: 30_000, cwd: dir });
    assert.equal(run.code, 0, run.stderr);
    const { primary, kept, gone } = JSON.parse(run.stdout) as { primary: string; kept: string; gone: string };
    assert.equal(primary, serverEntry(REPO_ROOT, process.env));
    assert.equal(kept, chosen, 'a worker runs what the primary chose');
    assert.equal(gone, serverEntry(REPO_ROOT, process.env), 'a choice whose file is gone: the current one');
  });
});

describe('the server bundle', () => {
  it('is built from our source alone, the same folder for the same source, and is what the server runs', async (t) => {
    const build = async () => {
      const run = await runNode([resolve(REPO_ROOT, 'scripts/build-server.js')], { env: {}, timeoutMs: 60_000, cwd: REPO_ROOT });
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, /^gatehouse: server bundled from \d+ files into \d+ chunks in \d+ ms\n$/);
      return readManifest();
    };
    const manifest = await build();
    assert.equal(serverEntry(REPO_ROOT, {}), pathToFileURL(join(REPO_ROOT, BUNDLE_DIRECTORY, manifest.entry)).href, 'the server runs the bundle just built');
    assert.equal(manifest.chunks['src/main.ts'], manifest.entry);
    assert.ok(manifest.chunks['src/server.ts'], 'the server is a chunk of its own (src/main.ts imports it once the config is read)');
    const inputs = Object.keys(manifest.inputs);
    assert.ok(inputs.filter((file) => file.startsWith('src/')).length > 300, `built from the source files (${inputs.length})`);
    assert.deepEqual(inputs.filter((file) => file.includes('node_modules')), [], 'the npm packages are not bundled: they load from node_modules');
    // The same source builds the same folder (its name is its content's hash): nothing changes under a running server.
    const again = await build();
    assert.equal(again.entry, manifest.entry);
    assert.equal(again.previous, manifest.previous, 'and the build before it stays the one before it');
    // Every chunk names its source files from the project's place, never from dist/: no import.meta is left in the bundle.
    const folder = join(REPO_ROOT, BUNDLE_DIRECTORY, manifest.entry.split('/')[0]!);
    for (const chunk of Object.values(manifest.chunks)) {
      assert.doesNotMatch(readFileSync(join(REPO_ROOT, BUNDLE_DIRECTORY, chunk), 'utf8').split('\n').slice(1).join('\n'), /import\.meta/, chunk);
    }
    assert.ok(existsSync(folder));

    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bundle-run-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = { NODE_ENV: 'development', LOG_LEVEL: 'info', AUTH_SECRET: randomSecret(), DATA_DIR: dataDir };
    const server = await startGatehouse({ env, nodeArgs: startScriptNodeArgs(), cleanup: (fn) => t.after(fn) });
    const listening = await server.child.waitForLog((entry) => entry.msg === LISTENING_MESSAGE, 1_000);
    assert.equal(listening.runsFrom, 'bundle');
    // A page: its template and catalog are read from src/ beside the source file the bundle names.
    const page = await fetch(`${server.base}/auth/signup`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<form[^>]+method="post"/i);
    // The API, and the password-strength worker (started from src/ by the URL the bundle rewrote).
    const weak = await fetch(`${server.base}/api/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'weak@example.com', password: 'password1234', name: 'Weak' }) });
    assert.equal(weak.status, 422);
    const refusal = (await weak.json()) as { error: string; errors: Array<{ field: string; reason: string }> };
    assert.equal(refusal.error, 'VALIDATION_ERROR');
    assert.equal(refusal.errors[0]?.field, 'password', JSON.stringify(refusal));
    const signup = await fetch(`${server.base}/api/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'strong@example.com', password: 'violet-harbor-tundra-47', name: 'Strong' }) });
    assert.equal(signup.status, 202, await signup.clone().text());
    const exit = await server.child.stop(30_000);
    assert.equal(exit.code, 0, server.child.stderr());

    const fromSource = await startGatehouse({ env: { ...env, GATEHOUSE_FROM_SOURCE: '1' }, nodeArgs: startScriptNodeArgs(), cleanup: (fn) => t.after(fn) });
    assert.equal((await fromSource.child.waitForLog((entry) => entry.msg === LISTENING_MESSAGE, 1_000)).runsFrom, 'source');
    assert.equal((await fromSource.child.stop(30_000)).code, 0);

    // `gatehouse serve` (the package's bin) runs the same bundle, started without `npm start`'s
    // flags: on Linux the process runs itself again, in place (the same pid), with them.
    const port = await freePort();
    const served = startNode([resolve(REPO_ROOT, 'src/cli/gatehouse.js'), 'serve'], { env: { ...env, PORT: String(port), HOST: '127.0.0.1', AUTH_URL: `http://127.0.0.1:${port}` }, deadlineMs: 60_000, cleanup: (fn) => t.after(fn) });
    assert.equal((await served.waitForLog((entry) => entry.msg === LISTENING_MESSAGE, 30_000)).runsFrom, 'bundle');
    assert.equal((await fetch(`http://127.0.0.1:${port}/api/health`)).status, 200);
    if (process.platform === 'linux') {
      const commandLine = readFileSync(`/proc/${served.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      assert.deepEqual(commandLine.slice(1), [...START_NODE_FLAGS, resolve(REPO_ROOT, 'src/cli/gatehouse.js'), 'serve']);
    }
    assert.equal((await served.stop(30_000)).code, 0);
    if (process.platform !== 'linux') return;

    // An operator's own value of the flag (here through NODE_OPTIONS) is kept: no restart.
    const ownPort = await freePort();
    const own = startNode([resolve(REPO_ROOT, 'src/cli/gatehouse.js'), 'serve'], { env: { ...env, NODE_OPTIONS: '--max-semi-space-size=16', PORT: String(ownPort), HOST: '127.0.0.1', AUTH_URL: `http://127.0.0.1:${ownPort}` }, deadlineMs: 60_000, cleanup: (fn) => t.after(fn) });
    await own.waitForLog((entry) => entry.msg === LISTENING_MESSAGE, 30_000);
    assert.deepEqual(readFileSync(`/proc/${own.pid}/cmdline`, 'utf8').split('\0').filter(Boolean).slice(1), [resolve(REPO_ROOT, 'src/cli/gatehouse.js'), 'serve']);
    assert.equal((await own.stop(30_000)).code, 0);

    // Nor does a process with an IPC channel (a process manager's fork) or a descriptor of its
    // parent's past the standard three, which execve would not keep.
    for (const extra of ['ipc', 'pipe'] as const) {
      const forkPort = await freePort();
      const forked = spawn(process.execPath, [resolve(REPO_ROOT, 'src/cli/gatehouse.js'), 'serve'], {
        env: { PATH: process.env.PATH, ...env, PORT: String(forkPort), HOST: '127.0.0.1', AUTH_URL: `http://127.0.0.1:${forkPort}` },
        stdio: ['ignore', 'pipe', 'pipe', extra],
      });
      t.after(() => forked.kill('SIGKILL'));
      let forkedOutput = '';
      forked.stdout!.setEncoding('utf8');
      await new Promise<void>((resolveListening, reject) => {
        forked.stdout!.on('data', (chunk: string) => {
          forkedOutput += chunk;
          if (forkedOutput.includes(LISTENING_MESSAGE)) resolveListening();
        });
        forked.once('exit', (code) => reject(new Error(`exited ${code} before listening`)));
      });
      assert.equal((await fetch(`http://127.0.0.1:${forkPort}/api/health`)).status, 200);
      assert.deepEqual(readFileSync(`/proc/${forked.pid}/cmdline`, 'utf8').split('\0').filter(Boolean).slice(1), [resolve(REPO_ROOT, 'src/cli/gatehouse.js'), 'serve'], extra);
      forked.kill('SIGTERM');
      const [forkedCode] = (await once(forked, 'exit')) as [number | null];
      assert.equal(forkedCode, 0, extra);
    }
  });
});
