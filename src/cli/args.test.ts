/** The command line's strict parser: what it accepts, and that its refusals name the option, never a value. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { asksForHelp, CliError, closestMatch, didYouMean, parseCommandLine, unknownSubcommand } from './args.ts';

const settings = { command: 'things show', usage: '  gatehouse things show ID [--json]', positionals: 1, what: 'thing ID' } as const;
const options = { json: { type: 'boolean' }, limit: { type: 'string' }, tag: { type: 'string', multiple: true } } as const;

function refusal(fn: () => unknown): CliError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof CliError);
    assert.equal(error.exitCode, 2);
    return error;
  }
  assert.fail('expected a refusal');
}

describe('parseCommandLine', () => {
  it('reads flags, --name value, --name=value, repeated options and the positional', () => {
    const { values, positionals } = parseCommandLine(['abc', '--json', '--limit', '5', '--tag=a', '--tag', 'b'], options, settings);
    assert.deepEqual(values, { json: true, limit: '5', tag: ['a', 'b'] });
    assert.deepEqual(positionals, ['abc']);
  });

  it('takes an argument that starts with a single dash as the id where one is expected, and anything after --', () => {
    assert.deepEqual(parseCommandLine(['-bcdefghijklmnop', '--json'], options, settings).positionals, ['-bcdefghijklmnop']);
    assert.deepEqual(parseCommandLine(['--limit', '3', '-x'], options, settings).positionals, ['-x']);
    assert.deepEqual(parseCommandLine(['--json', '--', '--looks-like-an-option'], options, settings).positionals, ['--looks-like-an-option']);
    // A value may start with a single dash; one that starts with -- must be written --limit=--x.
    assert.equal(parseCommandLine(['id', '--limit', '-5'], options, settings).values.limit, '-5');
    assert.equal(parseCommandLine(['id', '--limit=--x'], options, settings).values.limit, '--x');
  });

  it('names the bad option and never its value', () => {
    const unknown = refusal(() => parseCommandLine(['id', '--colour=blue-secret'], options, settings));
    assert.match(unknown.message, /^things show: unknown option --colour; its options: --json, --limit, --tag/);
    assert.doesNotMatch(unknown.message, /blue-secret/);
    assert.match(unknown.message, /Usage:\n {2}gatehouse things show/);
    const short = refusal(() => parseCommandLine(['id', '-pSECRET'], options, settings));
    assert.match(short.message, /unknown option -p\b/);
    assert.doesNotMatch(short.message, /SECRET/);
    assert.match(refusal(() => parseCommandLine(['id', '--json=yes'], options, settings)).message, /--json takes no value/);
    assert.match(refusal(() => parseCommandLine(['id', '--limit'], options, settings)).message, /--limit needs a value/);
    assert.match(refusal(() => parseCommandLine(['id', '--limit', '--json'], options, settings)).message, /--limit needs a value/);
    assert.match(refusal(() => parseCommandLine(['id', '--limit', '1', '--limit', '2'], options, settings)).message, /--limit may be given only once/);
    assert.match(refusal(() => parseCommandLine([], options, settings)).message, /name exactly one thing ID/);
    assert.match(refusal(() => parseCommandLine(['a', 'b'], options, settings)).message, /name exactly one thing ID/);
    assert.doesNotMatch(refusal(() => parseCommandLine(['a', 'b'], options, settings)).message, /\bb\b/);
  });

  it('mentions standard input only for a command that reads a password', () => {
    const plain = refusal(() => parseCommandLine(['--password', 'hunter2-hunter2'], {}, { command: 'users list', usage: '' }));
    assert.match(plain.message, /unknown option --password; this command takes no options/);
    assert.doesNotMatch(plain.message, /standard input|hunter2/);
    const reads = refusal(() => parseCommandLine(['--password', 'hunter2-hunter2'], { 'password-stdin': { type: 'boolean' } }, { command: 'users create', usage: '', readsPassword: true }));
    assert.match(reads.message, /unknown option --password \(passwords are read from standard input only: --password-stdin\)/);
    assert.doesNotMatch(reads.message, /hunter2/);
    const stray = refusal(() => parseCommandLine(['hunter2-hunter2'], {}, { command: 'users create', usage: '', readsPassword: true }));
    assert.match(stray.message, /unexpected argument \(passwords are read from standard input only/);
    assert.doesNotMatch(stray.message, /hunter2/);
  });

  it('asksForHelp sees --help and -h before --', () => {
    assert.equal(asksForHelp(['list', '--help']), true);
    assert.equal(asksForHelp(['-h']), true);
    assert.equal(asksForHelp(['show', '--', '-h']), false);
  });
});

describe('suggestions for a mistyped command or option', () => {
  it('names the close candidate, a unique prefix, or nothing', () => {
    const groups = ['serve', 'migrate', 'users', 'keys', 'clients', 'orgs', 'webhooks', 'backup', 'restore', 'doctor'];
    assert.equal(closestMatch('user', groups), 'users');
    assert.equal(closestMatch('uesrs', groups), 'users', 'a swap counts one');
    assert.equal(closestMatch('webhoks', groups), 'webhooks');
    assert.equal(closestMatch('client', groups), 'clients');
    assert.equal(closestMatch('frobnicate', groups), null);
    assert.equal(closestMatch('', groups), null);
    assert.equal(closestMatch('k', groups), null, 'one letter is no guess');
    assert.equal(didYouMean('jsn', ['json', 'query'], '--'), ' (did you mean "--json"?)');
    assert.equal(didYouMean('colour', ['json', 'limit', 'tag'], '--'), '');
  });

  it('a group without the command says which it likely was, then its usage', () => {
    const error = unknownSubcommand('things', 'lsit', ['list', 'show'], '  gatehouse things list');
    assert.equal(error.exitCode, 2);
    assert.match(error.message, /^unknown things command "lsit" \(did you mean "list"\?\)\n\nUsage:\n  gatehouse things list$/);
    assert.match(unknownSubcommand('things', '', ['list'], 'u').message, /^things needs a command/);
  });
});
