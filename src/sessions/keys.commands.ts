/** `gatehouse keys rotate|list`: the token signing keys (declared in keys.cli.ts, which loads this file when one runs). */
import { describeSigningKeys, rotateSigningKey } from './signing-keys.ts';
import { isoTime, systemClock } from '../lib/clock.ts';
import type { CliCommandRunner } from '../module.ts';
import { parseCommandLine, runSubcommand, writeJson, type Subcommands } from '../cli/args.ts';
import { withStorage } from '../cli/on-demand.ts';
import { KEYS_USAGE } from './keys.cli.ts';

/** `gatehouse keys <command> …`. */
export const runKeysCommand: CliCommandRunner = (args, io) => runSubcommand('keys', KEYS_USAGE, KEY_COMMANDS, args, io);

const KEY_COMMANDS: Subcommands = {
  async rotate(args, io) {
    parseCommandLine(args, {}, { command: 'keys rotate', usage: KEYS_USAGE });
    await withStorage(io, { migrate: true }, async (storage, config) => {
      const { kids, activeFrom } = await rotateSigningKey({ db: storage.db, authSecret: config.authSecret, clock: systemClock });
      for (const [algorithm, kid] of Object.entries(kids)) {
        io.stdout.write(`New signing key ${kid} (${algorithm}): published now, signing from ${isoTime(activeFrom)}.\n`);
      }
    });
  },
  async list(args, io) {
    const { values } = parseCommandLine(args, { json: { type: 'boolean' } }, { command: 'keys list', usage: KEYS_USAGE });
    await withStorage(io, { migrate: true }, async (storage) => {
      const keys = await describeSigningKeys(storage.db, Date.now());
      if (values.json) {
        writeJson(io, { keys: keys.map(toKeyJson) });
        return;
      }
      for (const key of keys) io.stdout.write(`${key.kid}  ${key.algorithm}  created ${isoTime(key.createdAt)}  ${key.state}\n`);
    });
  },
};

/**
 * A key as `keys list --json` prints it: `state` is `in service`, `retiring` (it signs until
 * `retiredAt`) or `retired` (it has signed nothing since `retiredAt`). Public facts only.
 */
function toKeyJson(key: { kid: string; algorithm: string; createdAt: number; state: string }) {
  const [, state = key.state, at = null] = /^(retiring|retired) (\S+)$/.exec(key.state) ?? [];
  return { kid: key.kid, algorithm: key.algorithm, createdAt: isoTime(key.createdAt), state, retiredAt: at };
}
