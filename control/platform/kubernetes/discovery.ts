/**
 * Device discovery: the nodes that are Ready and have allocatable devices of the configured extended
 * resource (`nvidia.com/gpu` from the NVIDIA device plugin), sorted by name so global ranks are stable
 * across restarts. Each node's sidecar listens on the node's address (a hostNetwork DaemonSet).
 */
import type { NodeDevices } from '../../../lib/platform.js';

export interface KubeNodeDevices extends NodeDevices {
  /** The node's InternalIP (else first address), where its sidecar listens. */
  address?: string;
  /** `http://<address>:<sidecarPort>` */
  sidecarUrl?: string;
}

interface NodeLike {
  metadata?: { name?: string };
  spec?: { unschedulable?: boolean };
  status?: {
    allocatable?: Record<string, string | number>;
    conditions?: Array<{ type?: string; status?: string }>;
    addresses?: Array<{ type?: string; address?: string }>;
  };
}

/** Quantity of a countable extended resource ("4", 4, "4k" is not a device count: 0). */
const count = (q: string | number | undefined): number => {
  const n = typeof q === 'number' ? q : Number(q ?? 0);
  return Number.isInteger(n) && n > 0 ? n : 0;
};

export function gpuNodes(nodes: NodeLike[], resource: string, sidecarPort: number): KubeNodeDevices[] {
  return nodes
    .filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && !n.spec?.unschedulable)
    .map((n) => {
      const addresses = n.status?.addresses ?? [];
      const address = (addresses.find((a) => a.type === 'InternalIP') ?? addresses[0])?.address;
      return {
        node: n.metadata?.name ?? '',
        devices: count(n.status?.allocatable?.[resource]),
        ...(address ? { address, sidecarUrl: `http://${address.includes(':') ? `[${address}]` : address}:${sidecarPort}` } : {}),
      };
    })
    .filter((n) => n.node && n.devices > 0)
    .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
}
