/**
 * A process kubelet (test infrastructure, not a container runtime): it registers a Node with labels and an
 * `nvidia.com/gpu` count, keeps its Lease and Ready condition fresh, watches the Pods the real scheduler binds
 * to it, and runs each pod's container as a local process:
 *  - the image names the command (IMAGES below: our executors, the app runtime, the control plane); an image
 *    it does not know leaves the container Waiting with ErrImagePull, as a missing image would;
 *  - each pod gets its own loopback address (127.<node>.<n>.<m>) as its pod IP; `0.0.0.0` in the container's
 *    args and env becomes that address, since a pod's "all interfaces" is its own network namespace;
 *  - env (values, fieldRef, configMapKeyRef), envFrom ConfigMaps, and ConfigMap volumes (written into the pod's
 *    folder; paths under a mountPath in args and env are translated to it, as a mount namespace would);
 *  - phase, container state, restart count and Ready come from the process and its readiness probe (httpGet);
 *  - restartPolicy is honoured (with a short back-off); a pod marked for deletion gets SIGTERM, then SIGKILL
 *    after its grace period, and is then removed; `fail()` is a node failure: heartbeats stop and its
 *    processes die with it.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CoordinationV1Api, CoreV1Api, Watch, type KubeConfig, type V1Container, type V1Pod } from '@kubernetes/client-node';
import { ManagedChild, type ExitInfo } from '../../control/platform/child.js';
import { sleep } from '../../lib/wait.js';
import { makeOwnedTempDir } from '../../lib/temp-dirs.js';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ORPHAN_GUARD = pathToFileURL(join(REPO_ROOT, 'control/platform/orphan-guard.ts')).href;
const NODE = [process.execPath, '--import', 'tsx', '--import', ORPHAN_GUARD];

/** What runs for an image: the command line before the container's own args. */
export type ImageCommand = (container: V1Container) => string[] | undefined;

/** `docker.io/cornserve/echo:latest` → `cornserve/echo`. */
export function imageName(ref: string): string {
  const noDigest = ref.split('@')[0]!;
  const parts = noDigest.split('/');
  const last = parts.pop()!.split(':')[0]!;
  if (parts.length > 1 && /[.:]|^localhost$/.test(parts[0]!)) parts.shift();
  return [...parts, last].join('/');
}

/** The images of this project and the entry each one's Dockerfile starts (knative/images/). */
export const IMAGES: ImageCommand = (c) => {
  const name = imageName(c.image ?? '');
  const executor = /^cornserve\/(echo|eric|geri|llm)$/.exec(name);
  if (executor) return [...NODE, `executors/${executor[1]}/main.ts`];
  if (name === 'cornserve/app-runtime') return [...NODE, 'functions/runtime/main.ts'];
  if (name === 'cornserve/control-plane') return [...NODE];
  return undefined;
};

export interface KubeletOptions {
  kubeConfig: KubeConfig;
  node: string;
  /** 1..254: the second octet of this node's pod addresses (127.<index>.x.y) and its InternalIP 127.<index>.0.1. */
  index: number;
  labels?: Record<string, string>;
  gpus?: number;
  images?: ImageCommand;
  /** @default 1000 */
  heartbeatMs?: number;
  /** Extra environment for every process (e.g. a test's log level). */
  env?: Record<string, string>;
}

interface RunningPod {
  pod: V1Pod;
  ip: string;
  dir: string;
  child?: ManagedChild;
  ready: boolean;
  restarts: number;
  lastTerminated?: { exitCode: number; signal?: number; reason: string; finishedAt: Date };
  state: 'waiting' | 'running' | 'terminated';
  waitingReason?: { reason: string; message: string };
  exit?: ExitInfo;
  deleting: boolean;
  probe?: NodeJS.Timeout;
  statusChain: Promise<void>;
}

const SIGNALS: Record<string, number> = { SIGKILL: 9, SIGTERM: 15, SIGINT: 2, SIGSEGV: 11, SIGABRT: 6 };
const LEASE_NS = 'kube-node-lease';

export class ProcessKubelet {
  readonly address: string;
  private readonly core: CoreV1Api;
  private readonly leases: CoordinationV1Api;
  private readonly pods = new Map<string, RunningPod>();
  private readonly images: ImageCommand;
  private heartbeat: NodeJS.Timeout | undefined;
  private watchAbort: AbortController | undefined;
  private stopped = false;
  private podCounter = 0;
  private dir = '';

  constructor(private readonly o: KubeletOptions) {
    this.core = o.kubeConfig.makeApiClient(CoreV1Api);
    this.leases = o.kubeConfig.makeApiClient(CoordinationV1Api);
    this.images = o.images ?? IMAGES;
    this.address = `127.${o.index}.0.1`;
  }

  static async start(o: KubeletOptions): Promise<ProcessKubelet> {
    const k = new ProcessKubelet(o);
    await k.register();
    await k.watchPods();
    return k;
  }

  private async register(): Promise<void> {
    this.dir = await makeOwnedTempDir(`cs-kubelet-${this.o.node}-`);
    const capacity = { cpu: '16', memory: '32Gi', pods: '110', ...(this.o.gpus ? { 'nvidia.com/gpu': String(this.o.gpus) } : {}) };
    await this.core.createNode({
      body: {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: this.o.node, labels: { 'kubernetes.io/hostname': this.o.node, 'kubernetes.io/os': 'linux', ...this.o.labels } },
        status: { capacity, allocatable: capacity, addresses: [{ type: 'InternalIP', address: this.address }, { type: 'Hostname', address: this.o.node }] },
      },
    });
    await this.beat();
    const every = this.o.heartbeatMs ?? 1000;
    this.heartbeat = setInterval(() => void this.beat().catch(() => {}), every);
    this.heartbeat.unref();
  }

  /** Ready condition + Lease renewal: what the node controller reads to decide the node is alive. */
  private async beat(): Promise<void> {
    const now = new Date();
    const node = await this.core.readNode({ name: this.o.node });
    const others = (node.status?.conditions ?? []).filter((c) => c.type !== 'Ready');
    node.status = {
      ...node.status,
      conditions: [...others, { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'process kubelet is posting ready status', lastHeartbeatTime: now, lastTransitionTime: now }],
    };
    await this.core.replaceNodeStatus({ name: this.o.node, body: node });
    const spec = { holderIdentity: this.o.node, leaseDurationSeconds: 40, renewTime: now as any };
    try {
      const lease = await this.leases.readNamespacedLease({ name: this.o.node, namespace: LEASE_NS });
      lease.spec = { ...lease.spec, ...spec };
      await this.leases.replaceNamespacedLease({ name: this.o.node, namespace: LEASE_NS, body: lease });
    } catch (e) {
      if ((e as { code?: number }).code !== 404) throw e;
      await this.leases.createNamespacedLease({ namespace: LEASE_NS, body: { metadata: { name: this.o.node, namespace: LEASE_NS }, spec } });
    }
  }

  private async watchPods(): Promise<void> {
    const list = await this.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${this.o.node}` });
    for (const pod of list.items) this.onPod('ADDED', pod);
    let rv = list.metadata?.resourceVersion;
    const open = async (): Promise<void> => {
      if (this.stopped) return;
      this.watchAbort = await new Watch(this.o.kubeConfig).watch(
        '/api/v1/pods',
        { fieldSelector: `spec.nodeName=${this.o.node}`, ...(rv ? { resourceVersion: rv } : {}), allowWatchBookmarks: true },
        (type, obj: V1Pod) => {
          if (obj?.metadata?.resourceVersion) rv = obj.metadata.resourceVersion;
          if (type === 'ERROR') rv = undefined;
          else if (type !== 'BOOKMARK') this.onPod(type as 'ADDED' | 'MODIFIED' | 'DELETED', obj);
        },
        () => {
          if (!this.stopped) void sleep(300).then(() => open().catch(() => sleep(1000).then(open)));
        },
      );
    };
    await open();
  }

  private onPod(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: V1Pod): void {
    const uid = pod.metadata!.uid!;
    const known = this.pods.get(uid);
    if (type === 'DELETED') {
      if (known) void this.finish(known, 0);
      return;
    }
    if (!known) {
      if (pod.metadata?.deletionTimestamp) return void this.removePod(pod);
      if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return;
      this.podCounter += 1;
      const ip = `127.${this.o.index}.${1 + Math.floor(this.podCounter / 250)}.${1 + (this.podCounter % 250)}`;
      const running: RunningPod = { pod, ip, dir: join(this.dir, uid), ready: false, restarts: 0, state: 'waiting', deleting: false, statusChain: Promise.resolve() };
      this.pods.set(uid, running);
      void this.startContainer(running);
      return;
    }
    known.pod = pod;
    if (pod.metadata?.deletionTimestamp && !known.deleting) {
      known.deleting = true;
      void this.finish(known, pod.metadata.deletionGracePeriodSeconds ?? 30).then(() => this.removePod(pod));
    }
  }

  private container(p: RunningPod): V1Container {
    return p.pod.spec!.containers[0]!;
  }

  /** Files of the pod's ConfigMap volumes, and the mountPath → folder translations. */
  private async mounts(p: RunningPod): Promise<Array<[string, string]>> {
    const ns = p.pod.metadata!.namespace!;
    const out: Array<[string, string]> = [];
    for (const m of this.container(p).volumeMounts ?? []) {
      const vol = p.pod.spec!.volumes?.find((v) => v.name === m.name);
      if (vol?.configMap) {
        const cm = await this.core.readNamespacedConfigMap({ name: vol.configMap.name!, namespace: ns });
        const dir = join(p.dir, 'volumes', m.name);
        mkdirSync(dir, { recursive: true });
        for (const [k, v] of Object.entries(cm.data ?? {})) writeFileSync(join(dir, k), v);
        out.push([m.mountPath, dir]);
      } else if (vol?.emptyDir) {
        const dir = join(p.dir, 'volumes', m.name);
        mkdirSync(dir, { recursive: true });
        out.push([m.mountPath, dir]);
      }
      // hostPath volumes are the host's own paths: nothing to translate.
    }
    return out;
  }

  private async environment(p: RunningPod, c: V1Container, translate: (s: string) => string): Promise<Record<string, string>> {
    const ns = p.pod.metadata!.namespace!;
    const env: Record<string, string> = {};
    for (const from of c.envFrom ?? []) {
      if (!from.configMapRef?.name) continue;
      const cm = await this.core.readNamespacedConfigMap({ name: from.configMapRef.name, namespace: ns });
      for (const [k, v] of Object.entries(cm.data ?? {})) env[`${from.prefix ?? ''}${k}`] = v;
    }
    const fields: Record<string, string | undefined> = {
      'metadata.name': p.pod.metadata!.name,
      'metadata.namespace': ns,
      'spec.nodeName': this.o.node,
      'status.podIP': p.ip,
      'status.hostIP': this.address,
      'spec.serviceAccountName': p.pod.spec!.serviceAccountName,
    };
    for (const e of c.env ?? []) {
      if (e.value !== undefined) env[e.name] = e.value;
      else if (e.valueFrom?.fieldRef) env[e.name] = fields[e.valueFrom.fieldRef.fieldPath] ?? '';
      else if (e.valueFrom?.configMapKeyRef) {
        const cm = await this.core.readNamespacedConfigMap({ name: e.valueFrom.configMapKeyRef.name!, namespace: ns });
        env[e.name] = cm.data?.[e.valueFrom.configMapKeyRef.key] ?? '';
      }
    }
    return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, translate(v)]));
  }

  private async startContainer(p: RunningPod): Promise<void> {
    const c = this.container(p);
    const command = this.images(c);
    if (!command) {
      p.waitingReason = { reason: 'ErrImagePull', message: `image ${c.image} is not known to the process kubelet` };
      return this.report(p);
    }
    try {
      mkdirSync(p.dir, { recursive: true });
      const mounts = await this.mounts(p);
      const translate = (s: string) => {
        let out = s.replaceAll('0.0.0.0', p.ip);
        for (const [from, to] of mounts) if (out === from || out.startsWith(`${from}/`)) out = to + out.slice(from.length);
        return out;
      };
      const env = await this.environment(p, c, translate);
      const args = [...(c.command ?? []), ...(c.args ?? [])].map(translate);
      p.child = await ManagedChild.spawn({
        name: `${this.o.node}/${p.pod.metadata!.name}`,
        command: command[0]!,
        args: [...command.slice(1), ...args],
        cwd: REPO_ROOT,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: p.dir,
          ...this.o.env,
          ...env,
          HOSTNAME: p.pod.metadata!.name!,
          CORNSERVE_PARENT_PID: String(process.pid),
        },
        sink: (prefix, line) => {
          if (process.env.CORNSERVE_KUBELET_LOGS) process.stderr.write(`[${prefix}] ${line}\n`);
        },
      });
    } catch (e) {
      p.waitingReason = { reason: 'CreateContainerError', message: (e as Error).message };
      return this.report(p);
    }
    p.state = 'running';
    p.waitingReason = undefined;
    p.ready = false;
    await this.report(p);
    this.startProbe(p);
    const child = p.child;
    const exit = await child.exited;
    if (p.child !== child) return;
    this.stopProbe(p);
    p.ready = false;
    p.state = 'terminated';
    p.exit = exit;
    p.lastTerminated = {
      exitCode: exit.code ?? 128 + (SIGNALS[exit.signal ?? ''] ?? 0),
      ...(exit.signal ? { signal: SIGNALS[exit.signal] } : {}),
      reason: exit.code === 0 ? 'Completed' : 'Error',
      finishedAt: new Date(),
    };
    if (p.deleting || this.stopped) return;
    const policy = p.pod.spec!.restartPolicy ?? 'Always';
    if (policy === 'Always' || (policy === 'OnFailure' && exit.code !== 0)) {
      p.restarts += 1;
      p.state = 'waiting';
      p.waitingReason = { reason: 'CrashLoopBackOff', message: `back-off restarting failed container` };
      await this.report(p);
      // Kubernetes backs off 10 s doubling to 5 min; a test cluster keeps it short.
      await sleep(Math.min(500 * 2 ** Math.min(p.restarts - 1, 4), 8000));
      if (!p.deleting && !this.stopped && this.pods.get(p.pod.metadata!.uid!) === p) await this.startContainer(p);
    } else {
      await this.report(p);
    }
  }

  private startProbe(p: RunningPod): void {
    const c = this.container(p);
    const probe = c.readinessProbe?.httpGet;
    if (!probe) {
      p.ready = true;
      void this.report(p);
      return;
    }
    const port = typeof probe.port === 'number' || /^\d+$/.test(String(probe.port))
      ? Number(probe.port)
      : c.ports?.find((x) => x.name === probe.port)?.containerPort;
    const periodMs = (c.readinessProbe!.periodSeconds ?? 10) * 1000;
    const failures = c.readinessProbe!.failureThreshold ?? 3;
    let failed = 0;
    const check = async () => {
      let ok = false;
      try {
        const res = await fetch(`http://${p.ip}:${port}${probe.path ?? '/'}`, { signal: AbortSignal.timeout((c.readinessProbe!.timeoutSeconds ?? 1) * 1000) });
        ok = res.status >= 200 && res.status < 400;
        await res.body?.cancel();
      } catch {
        ok = false;
      }
      failed = ok ? 0 : failed + 1;
      const ready = ok || (p.ready && failed < failures);
      if (ready !== p.ready && p.state === 'running') {
        p.ready = ready;
        await this.report(p);
      }
    };
    // Until the first success the probe runs often, so a starting pod turns Ready promptly; then at its period.
    const loop = async () => {
      if (p.state !== 'running' || p.probe === undefined) return;
      await check();
      if (p.state === 'running' && p.probe !== undefined) p.probe = setTimeout(loop, p.ready ? periodMs : Math.min(periodMs, 250));
    };
    p.probe = setTimeout(loop, 0);
  }

  private stopProbe(p: RunningPod): void {
    clearTimeout(p.probe);
    p.probe = undefined;
  }

  /** Writes the pod's status (serialised per pod; a conflict re-reads and retries). */
  private report(p: RunningPod): Promise<void> {
    p.statusChain = p.statusChain.then(() => this.writeStatus(p)).catch(() => {});
    return p.statusChain;
  }

  private async writeStatus(p: RunningPod): Promise<void> {
    if (this.stopped) return;
    const { name, namespace } = p.pod.metadata! as { name: string; namespace: string };
    const c = this.container(p);
    for (let attempt = 0; attempt < 5; attempt++) {
      let pod: V1Pod;
      try {
        pod = await this.core.readNamespacedPodStatus({ name, namespace });
      } catch (e) {
        if ((e as { code?: number }).code === 404) return;
        throw e;
      }
      if (pod.metadata?.uid !== p.pod.metadata?.uid) return;
      const now = new Date();
      const terminated = p.state === 'terminated' && p.lastTerminated;
      const policy = p.pod.spec!.restartPolicy ?? 'Always';
      const phase = p.state === 'running' || (p.state === 'waiting' && p.restarts > 0) ? 'Running'
        : terminated && policy !== 'Always' ? (p.lastTerminated!.exitCode === 0 ? 'Succeeded' : 'Failed')
        : terminated ? 'Running' : 'Pending';
      const cond = (type: string, status: boolean) => ({ type, status: status ? 'True' : 'False', lastTransitionTime: now });
      pod.status = {
        ...pod.status,
        phase,
        hostIP: this.address,
        podIP: p.ip,
        podIPs: [{ ip: p.ip }],
        startTime: pod.status?.startTime ?? now,
        conditions: [cond('Initialized', true), cond('Ready', p.ready), cond('ContainersReady', p.ready), cond('PodScheduled', true)],
        containerStatuses: [
          {
            name: c.name,
            image: c.image!,
            imageID: c.image!,
            ready: p.ready,
            started: p.state === 'running',
            restartCount: p.restarts,
            state: p.state === 'running' ? { running: { startedAt: now } }
              : p.state === 'terminated' && p.lastTerminated ? { terminated: { ...p.lastTerminated, startedAt: now } }
              : { waiting: p.waitingReason ?? { reason: 'ContainerCreating', message: '' } },
            ...(p.lastTerminated && p.restarts > 0 ? { lastState: { terminated: { ...p.lastTerminated, startedAt: now } } } : {}),
          },
        ],
      };
      try {
        await this.core.replaceNamespacedPodStatus({ name, namespace, body: pod });
        return;
      } catch (e) {
        const code = (e as { code?: number }).code;
        if (code === 404) return;
        if (code !== 409) throw e;
      }
    }
  }

  /** Stops the pod's process: SIGTERM, then SIGKILL after `graceSeconds`. */
  private async finish(p: RunningPod, graceSeconds: number): Promise<void> {
    p.deleting = true;
    this.stopProbe(p);
    await p.child?.stop(graceSeconds * 1000);
    this.pods.delete(p.pod.metadata!.uid!);
    rmSync(p.dir, { recursive: true, force: true });
  }

  /** The kubelet's last word on a pod marked for deletion: remove it for good (grace 0, same uid). */
  private async removePod(pod: V1Pod): Promise<void> {
    if (this.stopped) return;
    await this.core
      .deleteNamespacedPod({ name: pod.metadata!.name!, namespace: pod.metadata!.namespace!, gracePeriodSeconds: 0, body: { preconditions: { uid: pod.metadata!.uid! } } })
      .catch(() => {});
  }

  /** The pod's process id (a test kills it to play a crash). */
  pidOf(podName: string): number | undefined {
    return [...this.pods.values()].find((p) => p.pod.metadata?.name === podName)?.child?.pid;
  }

  /** The pods this kubelet runs (name → pod IP). */
  runningPods(): Array<{ name: string; namespace: string; ip: string; ready: boolean }> {
    return [...this.pods.values()].map((p) => ({ name: p.pod.metadata!.name!, namespace: p.pod.metadata!.namespace!, ip: p.ip, ready: p.ready }));
  }

  /** A node failure: heartbeats stop, the watch closes, and the pods' processes die with the node. */
  async fail(): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeat);
    this.watchAbort?.abort();
    for (const p of this.pods.values()) {
      this.stopProbe(p);
      p.child?.kill();
    }
    await Promise.all([...this.pods.values()].map((p) => p.child?.exited));
  }

  /** Stops every process (SIGTERM, a short grace) and removes the node's folder; the Node object stays. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeat);
    this.watchAbort?.abort();
    await Promise.all([...this.pods.values()].map((p) => (this.stopProbe(p), p.child?.stop(2000))));
    this.pods.clear();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}
