/**
 * What the client watches while it sends: ready executors per task once a second (the gateway's /tasks/list, so autoscaling shows), and for soak runs the resident memory
 * of every process in the local platform's tree (/proc).
 */
import type { GatewayClient } from '../../control/gateway/client.js';
import type { RssSample } from '../metrics/soak.js';
import type { ExecutorSample } from '../plots/specs.js';
import { processLabel, processTree, rssBytes } from './proc.js';

export interface Sampler<T> {
  /** Stops sampling and returns the samples (after one final sample). */
  stop(): Promise<T[]>;
}

/**
 * Ready executors per task from the gateway's /tasks/list every `intervalMs` (polls never overlap); only the
 * tasks in `taskIds` when it is not empty (the benchmarked app's).
 */
export function startExecutorPoller(client: GatewayClient, taskIds: readonly string[] = [], intervalMs = 1000): Sampler<ExecutorSample> {
  const t0 = performance.now();
  const samples: ExecutorSample[] = [];
  let polling: Promise<void> | undefined;
  const poll = () => {
    if (polling) return;
    const tS = (performance.now() - t0) / 1000;
    polling = client
      .tasks()
      .then((tasks) => {
        const mine = taskIds.length ? tasks.filter((t) => taskIds.includes(t.task_id)) : tasks;
        const label = (t: (typeof mine)[number]) => (mine.filter((o) => o.name === t.name).length > 1 ? `${t.name} (${t.task_id})` : t.name);
        samples.push({ tS, executors: Object.fromEntries(mine.map((t) => [label(t), t.executors.filter((e) => e.state === 'ready').length])) });
      })
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
