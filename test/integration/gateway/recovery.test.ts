import test from 'ava';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { uniquePrefix } from '../../helpers/ids.js';
import { ECHO_APP, startPlatform, type TestPlatform } from '../../helpers/platform.js';

let redis: RedisServer;
let current: TestPlatform | undefined;
test.before(async () => {
  redis = await startRedis();
});
test.after.always(async () => {
  await current?.stop();
  await redis?.stop();
});

test('restarting `up` on the same Redis brings the app (with a new function) and its task back', async (t) => {
  const opts = { redisUrl: redis.url, redisPrefix: uniquePrefix('up'), devices: 2 };
  current = await startPlatform(opts);
  const appId = await current.register(ECHO_APP, { alias: 'keeper' });
  const taskId = (await current.store.getApp(appId))!.taskIds[0]!;
  t.is((await current.invoke('keeper', { text: 'before' })).status, 200);
  await current.stop();
  current = undefined;

  current = await startPlatform(opts);
  const list = (await (await fetch(`${current.gatewayUrl}/app/list`)).json()) as Record<string, string>;
  t.deepEqual(list, { [appId]: 'ready' });
  const task = await current.store.getTask(taskId);
  t.is(task?.state, 'ready');
  t.is(task?.usage, 1);
  const res = await current.invoke('keeper', { text: 'after', chunks: 2 });
  t.is(res.status, 200);
  t.deepEqual((await res.text()).trim().split('\n').map((l) => JSON.parse(l) as unknown), [0, 1].map((index) => ({ echo: 'after', index })));
});
