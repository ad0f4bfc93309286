/**
 * A real Kubernetes control plane on loopback for tests: etcd, kube-apiserver, kube-controller-manager and
 * kube-scheduler (1.20, built from Debian's source by test/kube/build-binaries.sh), with a self-signed serving
 * certificate, a service-account key, a bearer token in `system:masters`, and a kubeconfig, all in one temp
 * folder on random free ports. There are no nodes: test/kube/kubelet.ts registers process-backed ones.
 *
 * stop() kills every process and removes the folder; so does the test process's exit.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { get as httpsGet } from 'node:https';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { freePort } from '../../lib/net.js';
import { sleep, waitUntil } from '../../lib/wait.js';
import { makeOwnedTempDir } from '../../lib/temp-dirs.js';

export const KUBE_VERSION = '1.20.2';

/** Where build-binaries.sh caches the servers (same defaults as the script). */
export function kubeBinDir(env: NodeJS.ProcessEnv = process.env): string {
  const root = env.KUBE_CACHE_DIR ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'cornserve');
  return join(root, `kubernetes-${KUBE_VERSION}`);
}

const SERVERS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
type Server = (typeof SERVERS)[number] | 'etcd';

/** Why the local cluster cannot start here, or undefined when it can. */
export function clusterUnavailable(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dir = kubeBinDir(env);
  const missing = SERVERS.filter((s) => !existsSync(join(dir, s)));
  if (missing.length) return `${missing.join(', ')} not built in ${dir} (run: make kube-binaries)`;
  try {
    execFileSync('etcd', ['--version'], { stdio: 'ignore' });
  } catch {
    return 'etcd is not installed (run: make kube-binaries, which installs etcd-server)';
  }
  return undefined;
}

export interface ClusterOptions {
  /** Seconds pods tolerate a NotReady / unreachable node before eviction (the API server's default tolerations). @default 300 */
  evictionSeconds?: number;
  /** How long a node may go without a heartbeat before the node controller marks it unknown. @default 40 */
  nodeGraceSeconds?: number;
  /** Where the servers' logs go (one file each in the cluster folder when unset). */
  logDir?: string;
}

export interface LocalCluster {
  readonly dir: string;
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly token: string;
  kubeConfig(namespace?: string): KubeConfig;
  /** Stops the API server, then starts it again on the same port (etcd keeps the state). */
  restartApiServer(): Promise<void>;
  /** Runs kubectl against this cluster; resolves with its stdout, rejects with its stderr. */
  kubectl(args: string[], input?: string): Promise<string>;
  stop(): Promise<void>;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA, a serving certificate for 127.0.0.1 signed by it, and an RSA key for service-account tokens. */
function makeCertificates(dir: string): void {
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=cornserve-test-ca', '-keyout', 'ca.key', '-out', 'ca.crt'], dir);
  writeFileSync(join(dir, 'san.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n');
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=kube-apiserver', '-keyout', 'apiserver.key', '-out', 'apiserver.csr'], dir);
  openssl(['x509', '-req', '-in', 'apiserver.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'san.cnf', '-out', 'apiserver.crt'], dir);
  openssl(['genrsa', '-out', 'sa.key', '2048'], dir);
  openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
}

function kubeconfigYaml(server: string, caPath: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: local\n  cluster:\n    server: ${server}\n    certificate-authority: ${caPath}`,
    'users:',
    `- name: admin\n  user:\n    token: ${token}`,
    'contexts:',
    '- name: local\n  context:\n    cluster: local\n    user: admin',
    'current-context: local',
    '',
  ].join('\n');
}

async function healthy(url: string, ca: string, token: string): Promise<boolean> {
  // node:https, because fetch has no per-request CA option on Node 20.
  return new Promise((resolve) => {
    const req = httpsGet(url, { ca, headers: { authorization: `Bearer ${token}` }, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
}

export async function startLocalCluster(o: ClusterOptions = {}): Promise<LocalCluster> {
  const why = clusterUnavailable();
  if (why) throw new Error(`the local Kubernetes cluster cannot start: ${why}`);
  const bin = kubeBinDir();
  const dir = await makeOwnedTempDir('cs-kube-');
  const logDir = o.logDir ?? dir;
  const procs = new Map<Server, ChildProcess>();
  let stopped = false;
  /** Servers being restarted on purpose: their exit is not news. */
  const restarting = new Set<Server>();
  const killAll = () => {
    for (const p of procs.values()) if (p.exitCode === null) p.kill('SIGKILL');
  };
  process.once('exit', () => {
    killAll();
    rmSync(dir, { recursive: true, force: true });
  });

  makeCertificates(dir);
  const token = randomBytes(16).toString('hex');
  writeFileSync(join(dir, 'tokens.csv'), `${token},admin,admin,system:masters\n`);
  const [etcdPort, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];
  const server = `https://127.0.0.1:${apiPort}`;
  const kubeconfigPath = join(dir, 'kubeconfig');
  writeFileSync(kubeconfigPath, kubeconfigYaml(server, join(dir, 'ca.crt'), token));
  const ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
  const evict = String(o.evictionSeconds ?? 300);

  const launch = (name: Server, command: string, args: string[]) => {
    const log = createWriteStream(join(logDir, `${name}.log`), { flags: 'a' });
    const p = spawn(command, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout!.pipe(log);
    p.stderr!.pipe(log);
    p.unref();
    procs.set(name, p);
    p.once('exit', (code, signal) => {
      if (!stopped && !restarting.has(name) && procs.get(name) === p) process.stderr.write(`[local-cluster] ${name} exited (${code ?? signal}); see ${join(logDir, `${name}.log`)}\n`);
    });
    return p;
  };

  const startApiServer = async () => {
    launch('kube-apiserver', join(bin, 'kube-apiserver'), [
      `--etcd-servers=http://127.0.0.1:${etcdPort}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      '--insecure-port=0',
      `--tls-cert-file=${join(dir, 'apiserver.crt')}`,
      `--tls-private-key-file=${join(dir, 'apiserver.key')}`,
      `--client-ca-file=${join(dir, 'ca.crt')}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      '--authorization-mode=RBAC',
      '--service-cluster-ip-range=10.96.0.0/16',
      `--default-not-ready-toleration-seconds=${evict}`,
      `--default-unreachable-toleration-seconds=${evict}`,
      '--allow-privileged=true',
      '--watch-cache=true',
    ]);
    await waitUntil('kube-apiserver /readyz', () => healthy(`${server}/readyz`, ca, token), { timeoutMs: 120_000, intervalMs: 250 });
  };

  const stopOne = async (name: Server) => {
    const p = procs.get(name);
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    p.ref();
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    const timer = setTimeout(() => p.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };

  const clientKubeconfig = join(dir, 'kubeconfig');
  try {
    launch('etcd', 'etcd', [
      '--data-dir', join(dir, 'etcd'),
      '--listen-client-urls', `http://127.0.0.1:${etcdPort}`,
      '--advertise-client-urls', `http://127.0.0.1:${etcdPort}`,
      '--listen-peer-urls', `http://127.0.0.1:${etcdPeer}`,
      '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`,
      '--initial-cluster', `default=http://127.0.0.1:${etcdPeer}`,
      '--name', 'default',
    ]);
    await startApiServer();
    launch('kube-controller-manager', join(bin, 'kube-controller-manager'), [
      `--kubeconfig=${clientKubeconfig}`,
      '--leader-elect=false',
      '--port=0',
      '--secure-port=0',
      `--service-account-private-key-file=${join(dir, 'sa.key')}`,
      `--root-ca-file=${join(dir, 'ca.crt')}`,
      '--use-service-account-credentials=false',
      '--node-monitor-period=1s',
      `--node-monitor-grace-period=${o.nodeGraceSeconds ?? 40}s`,
      '--concurrent-deployment-syncs=5',
    ]);
    launch('kube-scheduler', join(bin, 'kube-scheduler'), [
      `--kubeconfig=${clientKubeconfig}`,
      '--leader-elect=false',
      '--port=0',
      '--secure-port=0',
    ]);
  } catch (e) {
    stopped = true;
    killAll();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }

  const kubeConfig = (namespace?: string) => {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    if (namespace) kc.contexts = kc.contexts.map((c) => ({ ...c, namespace }));
    return kc;
  };

  return {
    dir,
    server,
    kubeconfigPath,
    token,
    kubeConfig,
    async restartApiServer() {
      restarting.add('kube-apiserver');
      try {
        await stopOne('kube-apiserver');
        await sleep(200);
        await startApiServer();
      } finally {
        restarting.delete('kube-apiserver');
      }
    },
    kubectl(args, input) {
      return new Promise((resolve, reject) => {
        const p = spawn('kubectl', [`--kubeconfig=${kubeconfigPath}`, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        p.stdout.on('data', (d) => (out += d));
        p.stderr.on('data', (d) => (err += d));
        p.on('error', reject);
        p.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`kubectl ${args.join(' ')} exited ${code}: ${err.trim()}`))));
        p.stdin.end(input ?? '');
      });
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      for (const name of ['kube-scheduler', 'kube-controller-manager', 'kube-apiserver', 'etcd'] as const) await stopOne(name);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
