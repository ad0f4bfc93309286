/**
 * `make chaos`: `make run`'s platform under 2 minutes of mixed chat load (text, image and audio requests to the
 * mllm app, which moves image and audio embeddings through the sidecar) while a seeded schedule SIGKILLs an
 * executor (twice), an engine, an app function, the sidecar and, with --redis, Redis (restarted after 5 s with its
 * data, as an operator's supervisor would). Reports, as Markdown for docs/reliability.md: requests sent, answered,
 * failed by code, hung (no answer within the deadline: must be 0); each kill and when the platform was healthy
 * again; each failure explained (in flight at a kill, or sent while the platform healed from one) or listed; and
 * whether every process came back. Exit 1 when a request hung, a failure is unexplained or a process did not heal.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pidListeningOn, processLabel, processTree } from '../../bench/client/proc.js';
import { sleep, waitUntil } from '../../lib/wait.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import { resultDirOf, runBench, startRunPlatform } from './platform.js';
import { type Kill, type Target, accountFor, chaosSchedule } from './schedule.js';

const HELP = `make chaos [REDIS=1] [SEED=n]   (node --import tsx test/chaos/chaos.ts [--redis] [--seed n] [--duration s])
  Kills platform processes on a seeded schedule under mixed load and accounts for every request.`;
const { values: o } = parseArgs({
  options: { redis: { type: 'boolean', default: false }, seed: { type: 'string', default: '1' }, duration: { type: 'string', default: '120' }, help: { type: 'boolean', default: false } },
});
if (o.help) { process.stdout.write(`${HELP}\n`); process.exit(0); }
const seed = Number(o.seed);
const durationS = Number(o.duration);
if (!Number.isInteger(seed) || !(durationS >= 60)) throw new Error('--seed takes an integer, --duration at least 60 (seconds)');
/** What each request may take: the client cuts it after this and counts it hung. */
const DEADLINE_S = 90;

const roleOf = (pid: number) => processLabel(pid).replace(/ \[\d+\]$/, '');
const cmdline = (pid: number) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' '); } catch { return ''; } };
const environ = (pid: number) => { try { return readFileSync(`/proc/${pid}/environ`, 'utf8'); } catch { return ''; } };

/** The processes a target names, in the platform's tree (the mllm app's own function first, when it can be told). */
function candidates(root: number, target: Target): number[] {
  const tree = processTree(root).filter((p) => p !== root);
  const match = (re: RegExp) => tree.filter((p) => re.test(cmdline(p)));
  switch (target) {
    case 'sidecar': return match(/sidecar\/main\.ts/);
    case 'engine': return match(/executors\/(eric|geri)\/engine\/main\.ts/);
    case 'executor': return match(/executors\/(eric|llm)\/main\.ts/); // the mllm app's tasks
    case 'app-function': {
      const fns = match(/functions\/runtime\/main\.ts(?! --check)/);
      return [...fns.filter((p) => /mllm/.test(environ(p))), ...fns.filter((p) => !/mllm/.test(environ(p)))];
    }
    case 'redis': return [];
  }
}

/** The platform's state as a poll sees it: /health's verdict and the ready executors of each task. */
interface Sample { at: number; ok: boolean; ready: Record<string, number>; roles: string[] }

const rolesOf = (root: number) => processTree(root).map(roleOf).filter((r) => !/esbuild/.test(r));

async function sample(url: string, root: number): Promise<Sample> {
  const at = Date.now();
  const roles = rolesOf(root);
  try {
    const h = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) });
    const ok = h.status === 200 && ((await h.json()) as { status?: string }).status === 'ok';
    const tasks = (await (await fetch(`${url}/tasks/list`, { signal: AbortSignal.timeout(2_000) })).json()) as Array<{ task_id: string; executors: Array<{ state: string }> }>;
    return { at, ok, roles, ready: Object.fromEntries(tasks.map((t) => [t.task_id, t.executors.filter((e) => e.state === 'ready').length])) };
  } catch {
    return { at, ok: false, roles, ready: {} };
  }
}

/** What `before` had and `now` lacks: processes (by role) and ready executors (by task). Empty when healed. */
function lacking(before: Sample, now: Sample): string[] {
  const left = [...now.roles];
  const roles = before.roles.filter((r) => { const i = left.indexOf(r); if (i < 0) return true; left.splice(i, 1); return false; });
  const tasks = Object.entries(before.ready).filter(([t, n]) => (now.ready[t] ?? 0) < n).map(([t]) => `ready executors of ${t}`);
  return [...roles, ...tasks, ...(now.ok ? [] : ['/health ok'])];
}

const redis: RedisServer | undefined = o.redis ? await startRedis({ persistent: true }) : undefined;
const up = await startRunPlatform(redis ? ['--redis', redis.url] : []);
const dir = resultDirOf('chaos');
const baseline = await sample(up.url, up.pid);
const loadStart = loadavg()[0]!;
const t0 = Date.now();
const targets: Target[] = ['executor', 'engine', 'app-function', 'sidecar', ...(redis ? ['redis' as const] : [])];
const plan = chaosSchedule(seed, targets, 25_000, (durationS - 15) * 1000, 12_000);
process.stderr.write(`chaos: seed ${seed}, kills at ${plan.map((k) => `${(k.atMs / 1000).toFixed(0)} s ${k.target}`).join(', ')}\n`);

const killsAt: Array<Kill & { epoch: number; before: Sample }> = [];
const samples: Sample[] = [];
let running = true;
const poller = (async () => { while (running) { samples.push(await sample(up.url, up.pid)); await sleep(500); } })();

const killer = (async () => {
  for (const k of plan) {
    await sleep(Math.max(0, t0 + k.atMs - Date.now()));
    if (k.target === 'redis') {
      const pid = pidListeningOn(redis!.port);
      const before = await sample(up.url, up.pid);
      if (pid) process.kill(pid, 'SIGKILL');
      killsAt.push({ ...k, label: `redis-server [${pid}]`, healedAtMs: null, epoch: Date.now(), before });
      await sleep(5_000);
      await redis!.restart();
      continue;
    }
    const list = candidates(up.pid, k.target);
    const pid = k.target === 'app-function' ? list[0] : list[Math.floor(((seed * 7919 + k.atMs) % 1000) / 1000 * list.length)];
    if (!pid) { process.stderr.write(`chaos: no ${k.target} to kill at ${k.atMs} ms\n`); continue; }
    const label = processLabel(pid);
    const before = await sample(up.url, up.pid);
    process.kill(pid, 'SIGKILL');
    process.stderr.write(`chaos: killed ${k.target} ${label}\n`);
    killsAt.push({ ...k, label, healedAtMs: null, epoch: Date.now(), before });
  }
})();

try {
  const results = await runBench(up.url, dir, ['--api', 'chat', '--model', 'mllm', '--request-rate', '2', '--duration', String(durationS),
    '--mix', 'text:0.5,image:0.3,audio:0.2', '--request-timeout', String(DEADLINE_S), '--seed', String(seed)]);
  await killer;
  // Healed: every process back, every task with as many ready executors as at the start, /health ok; within two minutes.
  let missing: string[] = [];
  try {
    await waitUntil('every process back and healthy', async () => (missing = lacking(baseline, await sample(up.url, up.pid))).length === 0, { timeoutMs: 120_000, intervalMs: 1_000 });
  } catch { /* `missing` says what did not come back */ }
  const healedAll = missing.length === 0;
  running = false;
  await poller;
  await writeFile(join(dir, 'health-samples.json'), JSON.stringify(samples));
  const loadStartMs = Date.parse(results.date as string);
  // Healed from a kill: the first poll after it (a probe period on: a kill takes up to one to be seen) that lacks nothing the platform had just before it.
  const kills: Kill[] = killsAt.map(({ epoch, before, ...k }) => {
    const back = samples.find((h) => h.at > epoch + 1_000 && lacking(before, h).length === 0);
    return { ...k, atMs: epoch - loadStartMs, healedAtMs: back ? back.at - loadStartMs : null };
  });
  const acc = accountFor(results.requests, kills, DEADLINE_S * 1000);
  const s = (ms: number | null) => (ms === null ? 'never' : `${(ms / 1000).toFixed(1)} s`);
  const md = [
    `Chaos: seed ${seed}, ${durationS} s of chat to mllm at 2 req/s (text 0.5, image 0.3, audio 0.2), deadline ${DEADLINE_S} s${redis ? ', with --redis' : ''}; load average ${loadStart.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end.`,
    '',
    '| kill | at | process | healthy again at |', '|---|---:|---|---:|',
    ...kills.map((k, i) => `| ${i + 1} | ${s(k.atMs)} | ${k.target}: ${k.label} | ${s(k.healedAtMs)} |`),
    '',
    '| requests | count |', '|---|---:|',
    `| sent | ${acc.sent} |`, `| answered | ${acc.answered} |`,
    ...Object.entries(acc.failedByCode).map(([c, n]) => `| failed: ${c} | ${n} |`),
    `| hung (no answer within the deadline) | ${acc.hung} |`,
    `| failures explained (in flight at a kill, or sent while healing) | ${acc.explained} |`,
    `| failures unexplained | ${acc.unexplained.length} |`,
    '',
    `Every process back after the load: ${healedAll ? 'yes' : `no (missing: ${missing.join(', ')})`}.`,
    '',
    ...Object.keys(acc.failedByCode).map((c) => `- ${c}, e.g.: ${results.requests.find((r) => !r.ok && (r.errorCode ?? `HTTP_${r.status}`) === c)?.errorMessage ?? ''}`),
    ...acc.unexplained.map((r) => `- unexplained: request ${r.index} (${r.kind}) sent at ${s(r.sentMs)}: ${r.errorCode ?? r.status} ${r.errorMessage ?? ''}`),
  ].join('\n');
  await writeFile(join(dir, 'chaos.md'), `${md}\n`);
  process.stdout.write(`\n${md}\n\nresults: ${dir}\n`);
  process.exitCode = acc.hung === 0 && acc.unexplained.length === 0 && healedAll ? 0 : 1;
} finally {
  running = false;
  await up.stop();
  await redis?.stop();
}
