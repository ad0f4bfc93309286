/**
 * What the client watches while it sends: ready executors per task once a second (the gateway's /tasks/list, so autoscaling shows), and for soak runs the resident memory
 * of every process in the local platform's tree (/proc).
 */
import type { GatewayClient } from '../../control/cli/client.js';
import type { RssSample } from '../metrics/soak.js';
import type { ExecutorSample } from '../plots/specs.js';
import { processLabel, processTree, rssBytes } from './proc.js';

export interface Sampler<T> {
  /** Stops sampling and returns the samples (after one final sample). */
  stop(): Promise<T[]>;
}

/** Ready executors per task from the gateway's /tasks/list every `intervalMs` (polls never overlap). */
export function startExecutorPoller(client: GatewayClient, intervalMs = 1000): Sampler<ExecutorSample> {
  const t0 = performance.now();
  const samples: ExecutorSample[] = [];
  let polling: Promise<void> | undefined;
  const poll = () => {
    if (polling) return;
    const tS = (performance.now() - t0) / 1000;
    polling = client
      .tasks()
      .then((tasks) => void samples.push({ tS, executors: Object.fromEntries(tasks.map((t) => [t.name, t.executors.filter((e) => e.state === 'ready').length])) }))
      .catch(() => { /* the gateway is busy or gone: this point is missing */ })
      .finally(() => (polling = undefined));
  };
  poll();
  const timer = setInterval(poll, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await polling;
      return samples;
    },
  };
}

/** RSS of `root` and its descendants, by process label, every `intervalMs`. */
export function startRssSampler(root: number, intervalMs = 5000): Sampler<RssSample> {
  const t0 = performance.now();
  const samples: RssSample[] = [];
  const labels = new Map<number, string>();
  const sample = () => {
    const rss: Record<string, number> = {};
    for (const pid of processTree(root)) {
      const b = rssBytes(pid);
      if (b === undefined) continue;
      if (!labels.has(pid)) labels.set(pid, processLabel(pid));
      rss[labels.get(pid)!] = b;
    }
    samples.push({ tS: (performance.now() - t0) / 1000, rssBytes: rss });
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      sample();
      return samples;
    },
  };
}
