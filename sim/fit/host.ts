/**
 * The platform's own cost per request and per invocation on this machine, measured with the live platform for
 * the local presets' `host` block (sim/scenario/schema.ts hostSchema): a `cornserve up` composition in this
 * process (1 device, no sidecar, no autoscaling) serves two echo apps whose executor does no work — one that calls
 * the echo task once per request and one that calls it twice in turn. Serial requests, interleaved rounds, the
 * median of each:
 *  - invocationMs = twice − once: one more app function → executor hop and its reply;
 *  - requestMs = once − invocationMs: the gateway → app function hop and the app function's own work.
 * On this machine every hop is work of processes sharing the same cores (HTTP, JSON, unix sockets), so the
 * simulator runs them as CPU work on the node's shared cores; the time a hop spends waiting on nothing but
 * another process's turn is in the figure too (it is what one request alone sees).
 */
import { randomBytes } from 'node:crypto';
import { cpus } from 'node:os';
import { parse as parseYaml, stringify } from 'yaml';
import { startCornserve } from '../../control/compose/up.js';
import { GatewayClient } from '../../control/gateway/client.js';
import type { HostModel } from '../scenario/schema.js';
import { medianMsEach } from './timing.js';

const echoApp = (name: string, calls: number) => `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { EchoTask } from 'cornserve/tasks';
const echo = new EchoTask({ serviceTimeMs: 0 });
export default defineApp({
  name: '${name}', tasks: { echo },
  request: z.object({ text: z.string() }), response: z.object({ echo: z.string() }),
  async serve(req) {
    let text = req.text;
    for (let i = 0; i < ${calls}; i++) text = (await echo.call({ text })).echo;
    return { echo: text };
  },
});`;

export interface HostSamples { onceMs: number; twiceMs: number }

/** Measured medians → the host model (never negative: a noisy pair where twice < once gives 0 per invocation). */
export function hostModel(s: HostSamples, cores = cpus().length): HostModel {
  const invocationMs = Math.max(0, s.twiceMs - s.onceMs);
  return { cores, requestMs: Math.max(0, s.onceMs - invocationMs), invocationMs };
}

export async function measureHost(repeats: number, progress: (line: string) => void): Promise<{ host: HostModel; samples: HostSamples }> {
  const token = randomBytes(12).toString('hex');
  const cs = await startCornserve({ port: 0, devices: 1, adminToken: token, sidecars: false, autoscale: false, logSink: () => {} });
  try {
    const client = new GatewayClient(cs.gatewayUrl, token, 120_000);
    const names = ['fit-echo-once', 'fit-echo-twice'];
    for (const [i, name] of names.entries()) {
      const final = await client.register(echoApp(name, i + 1), {});
      if (final.type !== 'final') throw new Error(`simulate fit: registering the ${name} app failed: ${JSON.stringify(final)}`);
    }
    const invoke = async (name: string) => {
      const res = await fetch(new URL(`/app/invoke/${name}`, cs.gatewayUrl), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ request_data: { text: 'hello' } }) });
      if (!res.ok) throw new Error(`simulate fit: ${name}: HTTP ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    };
    for (const name of names) for (let i = 0; i < 2; i++) await invoke(name); // warm-up: connections, first-call compilation (+1 in medianMsEach)
    const [onceMs, twiceMs] = await medianMsEach(repeats, names.map((name) => () => invoke(name)));
    const samples = { onceMs: onceMs!, twiceMs: twiceMs! };
    progress(`fit host: echo request with one call ${samples.onceMs.toFixed(2)} ms, with two calls ${samples.twiceMs.toFixed(2)} ms (median of ${repeats})`);
    return { host: hostModel(samples), samples };
  } finally {
    await cs.stop();
  }
}

/**
 * A presets file with `device`'s host block replaced by a new measurement (`cornserve simulate fit --host-only`):
 * the model steps stay as their own fit left them, and the header gets a line saying when and where the host block
 * was measured (replacing an earlier such line).
 */
export function presetWithHost(text: string, device: string, measured: { host: HostModel; samples: HostSamples }, where: { machine: string; loadAverage: number; date?: Date }): string {
  const raw = parseYaml(text) as { devices?: Record<string, Record<string, unknown>> };
  const entry = raw?.devices?.[device];
  if (!entry) throw new Error(`the presets file has no device '${device}' to add a host block to (run the full cornserve simulate fit first)`);
  const header = text.split('\n').filter((l) => l.startsWith('#') && !HOST_LINE.test(l));
  const day = (where.date ?? new Date()).toISOString().slice(0, 10);
  const { host, samples } = measured;
  header.push(`# host: measured by \`cornserve simulate fit --host-only\` (sim/fit/host.ts) on ${where.machine}, ${day}, load average ${where.loadAverage.toFixed(1)}: the ${host.cores} cores`,
    `#   the executors and the platform share, and the live platform's own cost per request and per invocation (serial`,
    `#   echo requests through \`cornserve up\` with one / two calls: ${samples.onceMs.toFixed(2)} / ${samples.twiceMs.toFixed(2)} ms).`);
  const round = (v: number) => Number(v.toPrecision(6));
  const body = { ...raw, devices: { ...raw.devices, [device]: { ...entry, host: { cores: host.cores, requestMs: round(host.requestMs), invocationMs: round(host.invocationMs) } } } };
  return `${header.join('\n')}\n${stringify(body)}`;
}

/** The header lines presetWithHost writes (recognised to be replaced): the first starts "# host: measured by". */
const HOST_LINE = /^# host: measured by |^# {3}(the executors and the platform share|echo requests through `cornserve up` with one)/;
