/**
 * At least once across a crash, with real processes: the server (`node src/start.js`) starts
 * delivering a webhook to a receiver that holds the request unanswered, is killed with SIGKILL
 * mid-delivery, and a new server on the same database delivers it again once the dead one's
 * lease has run out, with the same webhook-id and a signature the `standardwebhooks` library
 * verifies. The endpoint and the event come from the CLI (`gatehouse webhooks create`,
 * `gatehouse users create`), as an operator would.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { runCli, serverScratch, startGatehouse } from '../../test/helpers/process.ts';
import { startReceiver, verifyWithLibrary } from './test-receiver.ts';

for (const backend of await backends()) {
  describe(`webhook delivery across a SIGKILL (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    it('delivers again after the instance delivering it was killed', async (t) => {
      const scratch = serverScratch(t, 'webhooks-kill');
      const database = await backend.create();
      scratch.cleanup(() => database.drop());
      const env = {
        ...scratch.env,
        DATABASE_URL: database.url,
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
        WEBHOOK_TIMEOUT_MS: '2000',
        WEBHOOK_POLL_INTERVAL_MS: '200',
      };
      const receiver = await startReceiver(scratch.cleanup);
      receiver.answer('hold');

      const created = await runCli(['webhooks', 'create', '--url', receiver.url, '--event', 'user.created', '--json'], { env, cleanup: scratch.cleanup });
      assert.equal(created.code, 0, created.stderr);
      const { id, secret } = JSON.parse(created.stdout) as { id: string; secret: string };

      const first = await startGatehouse({ env, cleanup: scratch.cleanup });
      const user = await runCli(['users', 'create', '--email', 'kill@example.com', '--name', 'Kill Test', '--password-stdin'], { env, stdin: 'correct horse battery staple', cleanup: scratch.cleanup });
      assert.equal(user.code, 0, user.stderr);
      const held = await receiver.waitFor(1, 20_000);
      first.child.process.kill('SIGKILL');
      const exit = await first.child.waitForExit(10_000);
      assert.equal(exit.signal, 'SIGKILL');
      assert.equal(verifyWithLibrary(held, secret).type, 'user.created');

      receiver.answer({ status: 204 });
      const second = await startGatehouse({ env, cleanup: scratch.cleanup });
      const redelivered = await receiver.waitFor(2, 30_000);
      assert.equal(redelivered.headers['webhook-id'], held.headers['webhook-id'], 'the same webhook-id: the receiver can dedupe');
      assert.equal(redelivered.body, held.body);
      assert.equal(verifyWithLibrary(redelivered, secret).type, 'user.created');
      const timestamps = [held, redelivered].map((request) => Number(request.headers['webhook-timestamp']));
      assert.ok(timestamps[1]! - timestamps[0]! >= 5, 'not before the dead instance’s lease (3 × WEBHOOK_TIMEOUT_MS) ran out');

      let status = '';
      for (let i = 0; i < 20 && status !== 'delivered'; i++) {
        const listed = await runCli(['webhooks', 'deliveries', id, '--json'], { env, cleanup: scratch.cleanup });
        const [delivery] = (JSON.parse(listed.stdout) as { deliveries: Array<{ status: string; attempts: number }> }).deliveries;
        status = delivery!.status;
        if (status === 'delivered') assert.equal(delivery!.attempts, 2);
      }
      assert.equal(status, 'delivered');
      assert.equal(receiver.received.length, 2, 'delivered once more, not again and again');
      await second.child.stop(15_000);
      assert.ok(!second.child.output().includes(secret.slice(6)), 'the secret is never logged');
    });
  });
}
