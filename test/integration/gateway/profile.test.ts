import test from 'ava';
import { GatewayClient } from '../../../control/gateway/client.js';
import { tasksWithProfilesCommand } from '../../../control/cli/profile.js';
import { TEST_ADMIN_TOKEN, startPlatform, type TestPlatform } from '../../helpers/platform.js';

// One echo executor serving 2 requests at once, 20 ms each: exactly 100 req/s of capacity.
const KNOWN_CAPACITY_APP = `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { EchoTask } from 'cornserve/tasks';
const echo = new EchoTask({ serviceTimeMs: 20, maxConcurrency: 2 });
export default defineApp({
  name: 'known-capacity', tasks: { echo },
  request: z.object({ text: z.string() }), response: z.object({ echo: z.string() }),
  async serve(req) { return echo.call({ text: req.text }); },
});`;

interface PointJSON { devices_per_executor: number; concurrency: number; throughput_rps: number; p50_ms: number; p99_ms: number }
interface ProfileJSON { task_id: string; device_kind: string; points: PointJSON[]; frontier: PointJSON[]; saturation: PointJSON }

let p: TestPlatform;
let taskId: string;
test.before(async () => {
  p = await startPlatform({ devices: 2 });
  await p.register(KNOWN_CAPACITY_APP);
  taskId = ((await p.resources.listTasks()).find((x) => x.name === 'echo-20ms-x2'))!.taskId;
});
test.after.always(async () => {
  await p?.stop();
});

test.serial('profiling echo (20 ms, 2 at once) finds about 100 req/s, saturating past concurrency 1, and stores it for /tasks/list', async (t) => {
  const res = await p.admin('/task/profile', { task_id: taskId });
  t.is(res.status, 200);
  const profile = (await res.json()) as ProfileJSON;
  t.log(profile.points.map((x) => `c=${x.concurrency}: ${x.throughput_rps} req/s, p50 ${x.p50_ms} ms, p99 ${x.p99_ms} ms`).join("; "));
  t.is(profile.device_kind, 'cpu');
  const concurrencies = profile.points.map((x) => x.concurrency);
  // 1, 2, 4, … and the sweep stops once throughput stops rising (two levels without a gain past saturation).
  t.deepEqual(concurrencies, concurrencies.map((_, i) => 2 ** i));
  t.true(concurrencies.length >= 3 && concurrencies.length <= 6, `swept ${concurrencies.join(', ')}`);
  // Capacity is 2 ÷ 20 ms = 100 req/s; a loaded machine only lowers it, HTTP overhead included.
  t.true(profile.saturation.throughput_rps >= 60 && profile.saturation.throughput_rps <= 120, `saturation at ${profile.saturation.throughput_rps} req/s`);
  // One caller cannot fill two slots; past the slots, only a loaded machine's late timers move the knee (2 to 8).
  t.true(profile.saturation.concurrency >= 2 && profile.saturation.concurrency <= 8, `saturates at concurrency ${profile.saturation.concurrency}`);
  // One caller gets about half of it, and queueing past 2 at once raises latency without adding throughput.
  const [one] = profile.points;
  t.true(one!.throughput_rps < profile.saturation.throughput_rps * 0.75, `${one!.throughput_rps} req/s at concurrency 1`);
  const last = profile.points.at(-1)!;
  t.true(last.p50_ms > one!.p50_ms * 1.5, `p50 ${one!.p50_ms} ms at 1, ${last.p50_ms} ms at ${last.concurrency}`);
  // The frontier holds only undominated points, cheapest p99 first.
  for (let i = 1; i < profile.frontier.length; i++) t.true(profile.frontier[i]!.throughput_rps > profile.frontier[i - 1]!.throughput_rps);
  // A point is on the frontier exactly when no measured point beats it on both (past saturation a noisy 0.5% more
  // throughput at twice the p99 is still undominated, so how many points remain is the measurement's, not ours).
  const beats = (a: PointJSON, b: PointJSON) => a.throughput_rps >= b.throughput_rps && a.p99_ms <= b.p99_ms && (a.throughput_rps > b.throughput_rps || a.p99_ms < b.p99_ms);
  const onFrontier = (x: PointJSON) => profile.frontier.some((f) => f.concurrency === x.concurrency);
  for (const x of profile.points) t.is(onFrontier(x), !profile.points.some((q) => beats(q, x)), `c=${x.concurrency}`);
  t.true(profile.frontier.length >= 1);

  const record = (await p.store.getTask(taskId))!;
  const stored = await p.store.getProfile(record.key, 'cpu');
  t.deepEqual(stored?.points.map((x) => x.throughputRps), profile.points.map((x) => x.throughput_rps));
  const listed = (await (await fetch(new URL('/tasks/list', p.gatewayUrl))).json()) as Array<{ task_id: string; profile: ProfileJSON | null }>;
  t.deepEqual(listed.find((x) => x.task_id === taskId)?.profile?.points, profile.points);
});

test.serial('cornserve tasks --profile shows the stored profile with its frontier and saturation point', async (t) => {
  const out: string[] = [];
  await tasksWithProfilesCommand(new GatewayClient(p.gatewayUrl, TEST_ADMIN_TOKEN), { out: (l) => out.push(l), err: () => {} });
  const text = out.join('\n');
  t.regex(text, new RegExp(`${taskId} \\(echo-20ms-x2\\), measured \\S+ on cpu:`));
  t.regex(text, /CONCURRENCY\s+THROUGHPUT\s+P50\s+P99/);
  t.regex(text, /\*frontier/);
  t.regex(text, /<saturation/);
});

test('profiling an unknown task is a 404', async (t) => {
  const res = await p.admin('/task/profile', { task_id: 'echobasetask-000000000000' });
  t.is(res.status, 404);
  t.like(await res.json(), { error: { code: 'TASK_NOT_FOUND' } });
});

test('profiling needs the admin token', async (t) => {
  const res = await fetch(new URL('/task/profile', p.gatewayUrl), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ task_id: taskId }) });
  t.is(res.status, 401);
});

test('a profile request without task_id is a 422 naming the field', async (t) => {
  const res = await p.admin('/task/profile', {});
  t.is(res.status, 422);
  t.regex(await res.text(), /task_id/);
});
