/**
 * The client-side commands (everything but `up`): each talks to the gateway through GatewayClient and
 * prints for humans on `out` (stdout) and `err` (stderr). Failures throw CliError (main.ts prints them).
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { ndjsonLines } from '../../functions/sdk/index.js';
import type { GatewayClient, RegistrationEvent, TaskInfo } from '../gateway/client.js';
import { readRequestData } from './data.js';
import { CliError } from '../../lib/cli-errors.js';
import { terminalSafeJson } from './safe-text.js';
import { table } from '../../lib/table.js';
import type { Io } from '../../lib/io.js';


export async function registerCommand(client: GatewayClient, file: string, opts: { alias?: string; name?: string }, io: Io): Promise<string> {
  let source: string;
  try {
    source = await readFile(file, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as Error).message}`);
  }
  io.err(`registering ${file} ...`);
  const onEvent = (e: RegistrationEvent) => {
    if (e.type === 'initial') io.err(`  app ${String(e.app_id)}: deploying ${(e.task_names as string[]).join(', ') || 'no unit tasks'}`);
    if (e.type === 'progress') io.err(`  ✓ ${String(e.task)} ${String(e.state)}`);
  };
  const last = await client.register(source, { ...opts, file_name: basename(file) }, onEvent);
  if (last.type === 'error') throw new CliError(`registration failed: ${String(last.message)}`);
  io.out(`${String(last.app_id)} registered: ${String(last.message)}`);
  return String(last.app_id);
}

export async function unregisterCommand(client: GatewayClient, app: string, io: Io): Promise<void> {
  const r = await client.unregister(app);
  io.out(`unregistered ${r.name} (${r.app_id})`);
}

export async function listCommand(client: GatewayClient, io: Io): Promise<void> {
  const apps = await client.listDetails();
  if (apps.length === 0) return io.out('no apps registered');
  io.out(table(['APP ID', 'NAME', 'ALIASES', 'STATE'], apps.map((a) => [a.app_id, a.name, a.aliases.join(',') || '-', a.state])));
}

export async function invokeCommand(client: GatewayClient, app: string, data: string, opts: { timeoutMs?: number }, io: Io): Promise<void> {
  const requestData = await readRequestData(data);
  const res = await client.invoke(app, requestData, opts);
  if (!(res.headers.get('content-type') ?? '').includes('ndjson')) {
    io.out(terminalSafeJson(JSON.stringify(await res.json(), null, 2)));
    return;
  }
  for await (const line of ndjsonLines(res.body as unknown as AsyncIterable<Uint8Array>)) {
    const chunk = JSON.parse(line) as { error?: { code: string; message: string } };
    if (chunk.error && Object.keys(chunk).length === 1) throw new CliError(`the stream failed: ${chunk.error.code}: ${chunk.error.message}`);
    io.out(terminalSafeJson(line));
  }
}

export async function tasksCommand(client: GatewayClient, io: Io): Promise<void> {
  const tasks = await client.tasks();
  if (tasks.length === 0) return io.out('no unit tasks deployed');
  io.out(tasksTable(tasks));
  // Autoscaling (on unless --no-autoscale): each task's policy, desired count, demand, capacity, last decision and why.
  for (const t of tasks) {
    if (t.autoscale) {
      const demand = t.demand === null || t.demand === undefined ? '-' : `${t.demand.toFixed(1)} req/s`;
      const capacity = t.capacity ? `${t.capacity.per_executor_rps.toFixed(1)} req/s per executor (${t.capacity.source})` : 'capacity unknown';
      const executorSide = t.queue_depth === null || t.queue_depth === undefined ? '' : `, queued ${t.queue_depth}${t.busy_fraction === null || t.busy_fraction === undefined ? '' : `, busy ${Math.round(t.busy_fraction * 100)}%`}`;
      io.out(`${t.task_id}: autoscale ${policyText(t)}, desired ${t.desired ?? '-'}, demand ${demand}${executorSide}, ${capacity}`);
    }
    const d = t.last_decision;
    if (d) io.out(`${t.task_id}: ${new Date(d.at).toISOString()} ${d.from} -> ${d.to}: ${d.reason}`);
    if (t.autoscale?.cold_start_ms !== undefined) io.out(`${t.task_id}: last cold start ${(t.autoscale.cold_start_ms / 1000).toFixed(1)} s`);
    if (t.autoscale?.paused) io.out(`${t.task_id}: decisions paused: ${t.autoscale.paused}`);
    for (const node of t.sidecar_down ?? []) io.out(`${t.task_id}: not routed to on node ${node}: its sidecar is down (being restarted)`);
  }
}

/**
 * One row per unit task. Two tasks can share a name (`encoder-image-tiny-vlm-a` serving one model or two, an LLM
 * with or without received embeddings): CLASS and CONFIG (the task's declared fields) tell them apart.
 */
export function tasksTable(tasks: TaskInfo[]): string {
  return table(
    ['TASK ID', 'NAME', 'CLASS', 'CONFIG', 'STATE', 'USAGE', 'DEVICES', 'EXECUTORS', 'EXECUTION'],
    tasks.map((t) => [
      t.task_id,
      t.name,
      t.task_class,
      configSummary(t.task),
      t.state,
      String(t.usage),
      t.devices.map((d) => `${d.node}:${d.globalRank}`).join(',') || '-',
      `${t.executors.filter((e) => e.state === 'ready').length} ready / ${t.executors.length}`,
      executionSummary(t.executors),
    ]),
  );
}

/** Each executor's provider and device (`cuda:0,1`, `cpu`, `cpu (GPUs cuda:0 asked for)`), distinct values joined by `; `. */
function executionSummary(executors: TaskInfo['executors']): string {
  const seen = [...new Set(executors.map((e) => (e.execution ? (e.execution.provider === 'cpu' ? e.execution.device : `${e.execution.provider} ${e.execution.device}`) : '-')))];
  return seen.join('; ') || '-';
}

function policyText(t: TaskInfo): string {
  const a = t.autoscale;
  if (!a) return 'off';
  if (!a.policy) return 'manual';
  const p = a.policy;
  return `${p.min}..${p.max} ${p.slo_ms !== undefined ? `slo ${p.slo_ms} ms` : `target ${p.target}`} (${a.source})`;
}

export async function autoscaleCommand(client: GatewayClient, task: string, opts: { min: string; max: string; target?: string; sloMs?: string }, io: Io): Promise<void> {
  const int = (name: string, v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new CliError(`--${name} must be an integer >= 0, got ${v}`);
    return n;
  };
  if (opts.target !== undefined && opts.sloMs !== undefined) throw new CliError('give --target or --slo-ms, not both');
  const num = (name: string, v: string) => {
    const n = Number(v);
    if (!(n > 0)) throw new CliError(`--${name} must be a number > 0, got ${v}`);
    return n;
  };
  const t = await client.autoscale(task, {
    min: int('min', opts.min),
    max: int('max', opts.max),
    ...(opts.target !== undefined ? { target: num('target', opts.target) } : {}),
    ...(opts.sloMs !== undefined ? { slo_ms: num('slo-ms', opts.sloMs) } : {}),
  });
  io.out(`${t.task_id} (${t.name}) autoscales: ${policyText(t)}; ${t.executors.length} executor(s) now`);
}

/** `modality=image modelIds=a,b`: a task's config fields, compact. */
function configSummary(task: unknown): string {
  const config = (task as { config?: Record<string, unknown> } | null)?.config;
  if (!config || typeof config !== 'object') return '-';
  const parts = Object.entries(config).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}`);
  return parts.join(' ') || '-';
}

export async function scaleCommand(client: GatewayClient, task: string, n: string, io: Io): Promise<void> {
  const delta = Number(n);
  if (!Number.isInteger(delta) || delta === 0) throw new CliError(`N must be a non-zero integer (+n adds devices, -n removes them), got ${n}`);
  const t = await client.scale(task, delta);
  io.out(`${t.task_id} (${t.name}) now has ${t.devices.length} device(s) and ${t.executors.length} executor(s)`);
  if (t.executors.length === 0 && t.usage > 0) {
    io.err(`warning: ${t.name} has no executor now: the ${t.usage} app(s) using it get 503 NO_EXECUTOR until \`cornserve scale ${t.task_id} 1\``);
  }
}

/** `cornserve apply-plan FILE`: deploys a plan file (YAML or JSON, as `cornserve plan` writes it) on the running platform. */
export async function applyPlanCommand(client: GatewayClient, file: string, io: Io): Promise<void> {
  let plan: unknown;
  try {
    const { parse } = await import('yaml');
    plan = parse(await readFile(file, 'utf8'));
  } catch (e) {
    throw new CliError(`cannot read the plan ${file}: ${(e as Error).message}`);
  }
  io.err(`applying ${file} ...`);
  const { tasks } = await client.applyPlan(plan);
  for (const t of tasks) io.out(`${t.task_id} (${t.name}): ${t.executors.length} executor(s), ${t.devices.length} device(s)${t.desired !== null ? `; autoscaler starts from ${t.desired}` : ''}`);
}
