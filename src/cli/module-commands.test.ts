/**
 * The modules' `gatehouse` command groups (module.ts: `CliCommandGroup`): the command finds them by
 * their files, without loading the modules, and what it finds is what the module list declares;
 * `gatehouse help` still loads no module's code.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { collectCliGroups, defineModule, type CliCommandGroup } from '../module.ts';
import { MODULES } from '../modules.ts';
import { findModuleCliGroups, runCli } from './main.ts';

const MAIN = new URL('./main.ts', import.meta.url).href;

function captured() {
  const out = new PassThrough();
  let text = '';
  out.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  return { stream: out, text: () => text };
}

describe('the modules\' command groups', () => {
  it('are found by their *.cli.ts files exactly as the module list declares them, in their order', async () => {
    const found = await findModuleCliGroups();
    const declared = collectCliGroups(MODULES);
    assert.deepEqual(found.map((group) => group.name), declared.map((group) => group.name));
    found.forEach((group, index) => assert.equal(group, declared[index], `${group.name}: the same declaration as its module's`));
    assert.deepEqual(found.map((group) => group.name), ['users', 'keys', 'clients', 'orgs', 'domains', 'api-keys', 'scim', 'webhooks', 'sso', 'import', 'export']);
  });

  it('refuses a group two modules declare', () => {
    const group: CliCommandGroup = { name: 'twice', usage: '  gatehouse twice', order: 1, load: async () => async () => 0 };
    assert.throws(() => collectCliGroups([defineModule({ name: 'one', cli: [group] }), defineModule({ name: 'two', cli: [group] })]), /"twice" is declared by both "one" and "two"/);
  });

  it('runs a group given to it, with its usage in help, without the module being in src/', async () => {
    const seen: string[][] = [];
    const example: CliCommandGroup = {
      name: 'example',
      usage: '  gatehouse example run             an example module\'s command',
      order: 45,
      load: async () => async (args, _io, context) => {
        seen.push([...args, context.usage]);
        return 3;
      },
    };
    const groups = collectCliGroups([...MODULES, defineModule({ name: 'example', cli: [example] })]);
    const help = captured();
    assert.equal(await runCli(['help'], { stdin: new PassThrough(), stdout: help.stream, stderr: new PassThrough() }, { moduleGroups: groups }), 0);
    assert.match(help.text(), /gatehouse orgs delete ORG[^]*gatehouse example run[^]*gatehouse webhooks create/);
    assert.equal(await runCli(['example', 'run'], { stdin: new PassThrough(), stdout: new PassThrough(), stderr: new PassThrough() }, { moduleGroups: groups }), 3);
    assert.deepEqual(seen, [['run', example.usage]]);
  });

  it('`gatehouse help` loads no module, service or dependency: only the usage texts', () => {
    // The load hook sees every file imported after it is registered; main.ts is imported after it.
    const script = `
      import { registerHooks } from 'node:module';
      import { PassThrough } from 'node:stream';
      const loaded = [];
      registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
      const { runCli } = await import(${JSON.stringify(MAIN)});
      const sink = new PassThrough();
      sink.resume();
      const code = await runCli(['help'], { stdin: process.stdin, stdout: sink, stderr: sink });
      process.stdout.write(JSON.stringify({ code, loaded }));
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(child.status, 0, child.stderr);
    const { code, loaded } = JSON.parse(child.stdout) as { code: number; loaded: string[] };
    assert.equal(code, 0);
    const files = loaded.filter((url) => url.startsWith('file:'));
    assert.ok(files.some((url) => url.endsWith('/webhooks/webhooks.cli.ts')), files.join('\n'));
    const heavy = files.filter((url) => url.includes('/node_modules/') || /\/modules\.ts$|\.module\.ts$|\.routes\.ts$|\.service\.ts$|\.commands\.ts$|\/services\.ts$|\/context\.ts$/.test(url));
    assert.deepEqual(heavy, []);
  });
});
