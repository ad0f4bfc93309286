import type { Server } from 'node:http';

/**
 * Clean shutdown of a server process on SIGTERM / SIGINT: stop accepting, drop idle keep-alive connections,
 * run `cleanup` (engines, sidecar clients, model sessions), then exit 0. A second signal does nothing more.
 * The result tells whether shutdown has begun (so an engine exiting then is not reported as a crash).
 */
export function exitOnSignal(http: Server, cleanup: () => Promise<unknown> | unknown = () => undefined): { readonly stopping: boolean } {
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    http.close();
    http.closeAllConnections();
    void Promise.resolve()
      .then(cleanup)
      .catch(() => undefined)
      .finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  return {
    get stopping() {
      return stopping;
    },
  };
}
