/**
 * Reading pods: how often their containers restarted, how the last run ended, and whether a pod is
 * stuck in a state it will not leave by itself (bad image, missing config). Pure functions over the
 * pod JSON, so failure detection is tested without a cluster.
 */
import { constants } from 'node:os';

export interface PodExit {
  code: number | null;
  signal: string | null;
  reason: string;
}

interface ContainerStatus {
  restartCount?: number;
  state?: { terminated?: Terminated; waiting?: { reason?: string; message?: string }; running?: unknown };
  lastState?: { terminated?: Terminated };
}
interface Terminated { exitCode?: number; signal?: number; reason?: string; message?: string }
interface PodLike { status?: { phase?: string; reason?: string; message?: string; containerStatuses?: ContainerStatus[] } }

const SIGNAL_NAMES = Object.fromEntries(Object.entries(constants.signals).map(([name, n]) => [n, name]));

/** Total restarts of the pod's containers. */
export const podRestarts = (pod: PodLike): number =>
  (pod.status?.containerStatuses ?? []).reduce((n, c) => n + (c.restartCount ?? 0), 0);

function exitOf(t: Terminated): PodExit {
  const code = typeof t.exitCode === 'number' ? t.exitCode : null;
  const sig = t.signal ?? (code !== null && code > 128 ? code - 128 : undefined);
  return { code, signal: sig !== undefined ? SIGNAL_NAMES[sig] ?? null : null, reason: t.reason ?? 'Error' };
}

/** How the pod's most recent container run ended (current state first, then the previous one). */
export function lastExit(pod: PodLike): PodExit | undefined {
  for (const c of pod.status?.containerStatuses ?? []) {
    const t = c.state?.terminated ?? c.lastState?.terminated;
    if (t) return exitOf(t);
  }
  return undefined;
}

/** A pod the kubelet gave up on (evicted, node lost, all containers failed with restartPolicy Never). */
export function podFailed(pod: PodLike): PodExit | undefined {
  if (pod.status?.phase !== 'Failed') return undefined;
  return lastExit(pod) ?? { code: null, signal: null, reason: pod.status.reason ?? 'Failed' };
}

const STUCK = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError']);

/** A waiting reason that needs a human (the image cannot be pulled, a referenced Secret is missing), or undefined. */
export function podStuck(pod: PodLike): string | undefined {
  for (const c of pod.status?.containerStatuses ?? []) {
    const w = c.state?.waiting;
    if (w?.reason && STUCK.has(w.reason)) return `${w.reason}${w.message ? `: ${w.message}` : ''}`;
  }
  return undefined;
}
