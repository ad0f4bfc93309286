/**
 * Where an executor's SidecarClient connects: CORNSERVE_SIDECAR_URL may be the node sidecar's unix socket
 * (`/run/cs.sock`, `unix:/run/cs.sock`, `unix:///run/cs.sock` all give `/run/cs.sock`) or its HTTP URL
 * (`http://host:port`), whose GET /info names the socket (`socketPath`).
 */
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
