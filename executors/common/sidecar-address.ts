/**
 * Where an executor's SidecarClient connects: CORNSERVE_SIDECAR_URL may be the node sidecar's unix socket
 * (`/run/cs.sock`, `unix:/run/cs.sock`, `unix:///run/cs.sock` all give `/run/cs.sock`) or its HTTP URL
 * (`http://host:port`), whose GET /info names the socket (`socketPath`).
 */
import { SidecarClient } from '../../sidecar/client/client.js';

function socketPathOf(address: string): string | undefined {
  if (address.startsWith('unix://')) return address.slice('unix://'.length);
  if (address.startsWith('unix:')) return address.slice('unix:'.length);
  return address.startsWith('/') ? address : undefined;
}

export async function resolveSidecarSocket(address: string, timeoutMs = 10_000): Promise<string> {
  const path = socketPathOf(address);
  if (path) return path;
  if (!/^https?:\/\//.test(address)) throw new Error(`sidecar address must be a socket path, unix:<path> or http(s)://host:port, got ${address}`);
  const res = await fetch(new URL('/info', address), { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`sidecar ${address}/info answered ${res.status}`);
  const info = (await res.json()) as { socketPath?: unknown };
  if (typeof info.socketPath !== 'string') throw new Error(`sidecar ${address}/info names no socketPath`);
  return info.socketPath;
}

/**
 * The executor's SidecarClient receiving float32 (rank = its first sidecar rank, group = all of them), and the
 * socket it connected to; nothing without an address. An address without ranks is a configuration error.
 */
export async function connectSidecar(address: string | undefined, ranks: readonly number[], memoryHint?: number): Promise<{ socket?: string; sidecar?: SidecarClient }> {
  if (!address) return {};
  const socket = await resolveSidecarSocket(address);
  if (!ranks.length) throw new Error('a sidecar socket needs the executor\'s sidecar ranks (--sidecar-ranks or $CORNSERVE_SIDECAR_RANKS)');
  const sidecar = await SidecarClient.connect({ rank: ranks[0]!, group: [...ranks], socketPath: socket, recvDtype: 'f32', ...(memoryHint ? { memoryHint } : {}) });
  return { socket, sidecar };
}
