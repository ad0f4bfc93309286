/**
 * A benchmark whose requests can never succeed, against a real HTTP server speaking the gateway's routes that refuses
 * every invoke as the gateway refuses request data of the wrong shape.
 */
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchCommand } from '../../../control/cli/bench.js';
import { CliError } from '../../../lib/cli-errors.js';
import { startBenchGateway } from '../../helpers/bench-gateway.js';

async function startRefusingServer(): Promise<{ url: string; invoked: () => number; close: () => Promise<void> }> {
  let invoked = 0;
  const gateway = await startBenchGateway('echo', (req, reply) => {
    invoked++;
    req.resume();
    reply(422, { error: { code: 'INVALID_INPUT', message: 'request_data: text: Required' } });
  });
  return { ...gateway, invoked: () => invoked };
}

test('invoke without --dataset, refused alike from the start, stops early with an error that names --dataset', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cornserve-hopeless-'));
  const server = await startRefusingServer();
  t.teardown(async () => { await server.close(); await rm(dir, { recursive: true, force: true }); });
  const run = benchCommand({ out: () => {}, err: () => {} }, () => server.url).exitOverride().parseAsync(
    ['--api', 'invoke', '--app', 'echo', '--request-rate', '20', '--num-requests', '200', '--result-dir', join(dir, 'out'), '--no-plots'],
    { from: 'user' },
  );
  const err = await t.throwsAsync(run, { instanceOf: CliError });
  t.regex(err!.message, /first 5 requests all failed with HTTP 422 INVALID_INPUT: request_data: text: Required\./);
  t.regex(err!.message, /--dataset/);
  t.true(server.invoked() < 200, `${server.invoked()} requests sent`);
});
