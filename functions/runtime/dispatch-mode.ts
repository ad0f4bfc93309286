/**
 * How an app function dispatches its task graphs (CORNSERVE_DISPATCH):
 *  - `cloudevent` (default): a CloudEvent to the dispatcher service per graph (Knative's shape, design card);
 *  - `in-process`: graph execution runs in this process (control/dispatcher/in-process.ts) over the shared
 *    Store — one HTTP hop fewer per request: the Redis Store named by CORNSERVE_STORE_URL (+ CORNSERVE_STORE_PREFIX),
 *    or the `cornserve up` process's in-memory Store through its store link at CORNSERVE_STORE_SOCKET
 *    (control/store/link-protocol.ts; plain `up` without Redis).
 * `in-process` without either is refused: a store of this process alone would count only this process's leases,
 * and least-outstanding routing across app functions would be wrong.
 * The dispatcher's modules are imported only for `in-process`, so the CloudEvent path starts as before.
 */
import type { Registry } from 'prom-client';
import { z } from 'zod';
import type { GraphDispatcher } from '../sdk/index.js';
import { CloudEventDispatcher } from './cloudevent-dispatcher.js';

export const DISPATCH_ENV = { mode: 'CORNSERVE_DISPATCH', storeUrl: 'CORNSERVE_STORE_URL', storePrefix: 'CORNSERVE_STORE_PREFIX', storeSocket: 'CORNSERVE_STORE_SOCKET' } as const;
export const DISPATCH_MODES = ['cloudevent', 'in-process'] as const;
export type DispatchMode = (typeof DISPATCH_MODES)[number];

const dispatchEnv = z.object({
  [DISPATCH_ENV.mode]: z.enum(DISPATCH_MODES, { error: `${DISPATCH_ENV.mode} must be one of ${DISPATCH_MODES.join(', ')}` }).default('cloudevent'),
  [DISPATCH_ENV.storeUrl]: z.string().regex(/^rediss?:\/\//, `${DISPATCH_ENV.storeUrl} must be a redis:// URL`).optional(),
  [DISPATCH_ENV.storePrefix]: z.string().optional(),
  [DISPATCH_ENV.storeSocket]: z.string().startsWith('/', `${DISPATCH_ENV.storeSocket} must be an absolute socket path`).optional(),
});

export interface OpenedDispatcher {
  dispatcher: GraphDispatcher;
  mode: DispatchMode;
  /** In-process dispatch: the dispatcher's metrics (control/dispatcher/metrics.ts), served on GET /metrics for the gateway to sum. */
  metrics?: Registry;
  close(): Promise<void>;
}

/** The dispatcher `env` asks for; throws naming the variable when the environment does not allow it. */
export async function openDispatcher(env: NodeJS.ProcessEnv, o: { appId: string; dispatcherUrl: string }): Promise<OpenedDispatcher> {
  const parsed = dispatchEnv.safeParse({ ...env, [DISPATCH_ENV.mode]: env[DISPATCH_ENV.mode] || undefined });
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => i.message).join('; '));
  const mode = parsed.data[DISPATCH_ENV.mode];
  if (mode === 'cloudevent') {
    const dispatcher = new CloudEventDispatcher(o.dispatcherUrl, { appId: o.appId });
    return { dispatcher, mode, close: async () => dispatcher.close() };
  }
  const storeUrl = parsed.data[DISPATCH_ENV.storeUrl];
  const storeSocket = parsed.data[DISPATCH_ENV.storeSocket];
  if (!storeUrl && !storeSocket)
    throw new Error(
      `${DISPATCH_ENV.mode}=in-process needs the shared store: the Redis store in ${DISPATCH_ENV.storeUrl} or the up process's store link in ${DISPATCH_ENV.storeSocket} (executor leases must be counted where every app function sees them)`,
    );
  const { InProcessDispatcher } = await import('../../control/dispatcher/in-process.js');
  const { DispatcherMetrics } = await import('../../control/dispatcher/metrics.js');
  const { Registry: MetricsRegistry } = await import('prom-client');
  const metrics = new DispatcherMetrics(new MetricsRegistry());
  if (!storeUrl) {
    const { StoreLink } = await import('../../control/store/link-client.js');
    const link = new StoreLink(storeSocket!);
    await link.ready();
    // Route changes reach the link's subscribers, so a task with one ready executor need not be read per graph, and
    // its leases (every release too) are reported to the `up` process without the request waiting for the reply.
    const dispatcher = new InProcessDispatcher(link, { appId: o.appId, metrics, router: { cacheRoutes: 'one-ready', leases: 'reported' } });
    return { dispatcher, mode, metrics: metrics.registry, close: () => dispatcher.close().finally(() => link.close()) };
  }
  const { RedisStore } = await import('../../control/store/redis.js');
  const prefix = parsed.data[DISPATCH_ENV.storePrefix];
  const store = new RedisStore({ url: storeUrl, ...(prefix ? { prefix } : {}) });
  await store.ready();
  const dispatcher = new InProcessDispatcher(store, { appId: o.appId, metrics });
  // Drain the graphs in flight and write the pending load signals before the Store goes.
  return { dispatcher, mode, metrics: metrics.registry, close: () => dispatcher.close().finally(() => store.close()) };
}
