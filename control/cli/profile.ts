/**
 * `cornserve profile TASK_ID` (measure a task's throughput–latency profile on one of its executors) and
 * `cornserve tasks --profile` (the tasks table, then each task's stored profile).
 */
import type { GatewayClient, ProfileInfo, TaskInfo } from '../gateway/client.js';
import { tasksCommand } from './commands.js';
import type { Io } from '../../lib/io.js';
import { CliError } from '../../lib/cli-errors.js';
import { table } from '../../lib/table.js';

/** One row per measured point; `*` marks the frontier, `<` the saturation point. */
export function profileTable(p: ProfileInfo): string {
  const same = (a: ProfileInfo['points'][number], b: ProfileInfo['points'][number] | null) =>
    !!b && a.concurrency === b.concurrency && a.devices_per_executor === b.devices_per_executor;
  return table(
    ['DEVICES', 'CONCURRENCY', 'THROUGHPUT', 'P50', 'P99', ''],
    p.points.map((x) => [
      String(x.devices_per_executor),
      String(x.concurrency),
      `${x.throughput_rps.toFixed(1)} req/s`,
      `${x.p50_ms.toFixed(1)} ms`,
      `${x.p99_ms.toFixed(1)} ms`,
      [p.frontier.some((f) => same(x, f)) ? '*frontier' : '', same(x, p.saturation) ? '<saturation' : ''].filter(Boolean).join(' '),
    ]),
  );
}

export async function profileCommand(client: GatewayClient, taskId: string, io: Io): Promise<void> {
  // Asked first, so that an unknown task is told as such, not after "profiling …" was announced.
  const known = (await client.tasks()).map((t) => t.task_id);
  if (!known.includes(taskId)) throw new CliError(`no task ${taskId} is deployed (deployed: ${known.join(', ') || 'none'}; \`cornserve tasks\` lists them)`);
  io.err(`profiling ${taskId} on one of its executors (1, 2, 4, … in flight until throughput stops rising; a few seconds per level)…`);
  const r = await client.profile(taskId);
  io.out(`${r.task_id} on ${r.executor_id} (${r.device_kind}):`);
  io.out(profileTable(r));
  if (r.saturation) io.out(`capacity ≈ ${r.saturation.throughput_rps.toFixed(1)} req/s per executor, reached at ${r.saturation.concurrency} in flight`);
  for (const s of r.skipped) io.out(`not measured: ${s.devices_per_executor} device(s) per executor (${s.reason})`);
}

export async function tasksWithProfilesCommand(client: GatewayClient, io: Io): Promise<void> {
  await tasksCommand(client, io);
  const tasks: TaskInfo[] = await client.tasks();
  for (const t of tasks) {
    io.out('');
    if (!t.profile) {
      io.out(`${t.task_id} (${t.name}): no profile (run \`cornserve profile ${t.task_id}\`)`);
      continue;
    }
    io.out(`${t.task_id} (${t.name}), measured ${t.profile.measured_at} on ${t.profile.device_kind}:`);
    io.out(profileTable(t.profile));
  }
}
