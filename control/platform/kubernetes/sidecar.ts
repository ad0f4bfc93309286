/**
 * The sidecar of one GPU node, as the DaemonSet starts it: which global ranks it serves and (without a Store) where
 * its peers are. Ranks are numbered exactly as the resource manager numbers devices (policies/allocation.ts
 * buildInventory over KubernetesPlatform.listNodes(): consecutive from 0 over the GPU nodes sorted by name),
 * so the sidecar and the resource manager agree without talking to each other. Pure functions; see
 * sidecar-main.ts for the process. When GPU nodes are added or removed the numbering changes: restart the resource
 * manager and the sidecars (`kubectl -n cornserve rollout restart deploy/resource-manager ds/sidecar`); with the Store,
 * each restarted sidecar registers its new ranks and the others read them on their next refresh.
 */
import type { KubeNodeDevices } from './discovery.js';
import type { PeerAddress } from '../../../sidecar/server/peers.js';
import { InvalidSpecError } from './errors.js';

export interface SidecarTopology {
  node: string;
  /** The node's address other sidecars dial. */
  host: string;
  ranks: number[];
  peers: PeerAddress[];
}

export function sidecarTopology(nodes: KubeNodeDevices[], me: string, peerPort: number): SidecarTopology {
  let next = 0;
  const all = nodes.map((n) => {
    if (!n.address) throw new InvalidSpecError(`GPU node ${n.node} reports no address; its sidecar cannot be reached`);
    return { node: n.node, host: n.address, port: peerPort, ranks: Array.from({ length: n.devices }, () => next++) };
  });
  const self = all.find((n) => n.node === me);
  if (!self) throw new InvalidSpecError(`node ${me} is not a Ready, schedulable GPU node (known: ${nodes.map((n) => n.node).join(', ') || 'none'})`);
  return { node: me, host: self.host, ranks: self.ranks, peers: all.filter((n) => n.node !== me) };
}

export interface SidecarArgsOptions {
  socket: string;
  httpPort: number;
  peerPort: number;
  storeUrl?: string | undefined;
}

/**
 * Arguments for sidecar/main.ts. With the Store the sidecar registers there (ranks, address, lease) and finds its
 * peers through it when it needs them, so sidecars may join and leave; without one, the peers are fixed at start.
 */
export function sidecarArgs(t: SidecarTopology, o: SidecarArgsOptions): string[] {
  return [
    '--node', t.node,
    '--ranks', t.ranks.join(','),
    '--socket', o.socket,
    '--host', t.host,
    '--peer-port', String(o.peerPort),
    '--http-port', String(o.httpPort),
    ...(o.storeUrl ? ['--store-url', o.storeUrl] : t.peers.flatMap((p) => ['--peer', `${p.node}=${p.host}:${p.port}@${p.ranks.join(',')}`])),
  ];
}
