/**
 * The task registry across processes: a unit task registered at the gateway process is picked up by the
 * resource-manager and dispatcher processes through the Store's change notifications (one real Redis), so an app
 * using it deploys and answers.
 */
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { GatewayClient } from '../../../control/gateway/client.js';
import { TEST_ADMIN_TOKEN } from '../../helpers/platform.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { repoRoot } from '../../helpers/repo.js';
import { CLI, DISPATCHER, startRole, type RoleProcess } from '../../helpers/roles.js';

let redis: RedisServer;
let roles: RoleProcess[] = [];
let client: GatewayClient;

test.before(async () => {
  redis = await startRedis();
  const rm = await startRole(CLI, ['resource-manager', '--redis', redis.url, '--platform', 'local', '--devices', '2']);
  const dispatcher = await startRole(DISPATCHER, ['--redis', redis.url]);
  const gateway = await startRole(CLI, ['gateway', '--redis', redis.url], {
    CORNSERVE_RESOURCE_MANAGER_URL: rm.url,
    CORNSERVE_DISPATCHER_URL: dispatcher.url,
    CORNSERVE_ADMIN_TOKEN: TEST_ADMIN_TOKEN,
  });
  roles = [gateway, dispatcher, rm];
  client = new GatewayClient(gateway.url, TEST_ADMIN_TOKEN);
});

test.after.always(async () => {
  for (const p of roles) await p.stop();
  await redis?.stop();
});

test('a unit task registered at the gateway process is deployed by the resource manager and dispatched by the dispatcher process', async (t) => {
  const r = await client.registerTask(await readFile(`${repoRoot}/examples/registry/word-count.ts`, 'utf8'));
  t.true(r.created);
  const last = await client.register(await readFile(`${repoRoot}/examples/registry/word-count-app.ts`, 'utf8'), {});
  t.is(last.type, 'final', JSON.stringify(last) + roles.map((p) => p.output()).join('\n'));
  const res = await client.invoke('word-count', { text: 'three little words' });
  t.deepEqual(await res.json(), { words: 3, longest: 'little' });
});
