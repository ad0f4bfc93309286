/**
 * CORNSERVE_SIDECAR_URL → the node sidecar's unix socket path. The platform passes `unix:<path>` (Kubernetes)
 * or a plain path; `unix:///p`, `unix:/p` and `/p` all give `/p`. Anything else (e.g. an http URL) is not a
 * socket: undefined.
 */
export function socketPathOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  if (url.startsWith('unix://')) return url.slice('unix://'.length);
  if (url.startsWith('unix:')) return url.slice('unix:'.length);
  return url.startsWith('/') ? url : undefined;
}
