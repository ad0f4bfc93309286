/**
 * Watching without missing anything:
 *  - `informer()`: list, then watch from the list's resourceVersion; a watch that ends is re-opened from the
 *    last version seen; a 410 Gone (version too old) relists. Runs until stopped.
 *  - `waitFor()`: one object, until a check says done or failed, bounded by a timeout.
 */
import type { Logger } from '../../../lib/log.js';
import type { KubeClient, KubeObject, ResourceRef, WatchEventType } from './client.js';
import { DeployFailedError, NotReadyError } from './errors.js';

export interface Informer {
  /** Resolves once the first list was delivered and the watch is open. */
  readonly ready: Promise<void>;
  stop(): void;
}

export interface InformerHandlers {
  /** The full state after a (re)list. */
  onList(items: KubeObject[]): void;
  onEvent(type: Exclude<WatchEventType, 'ERROR' | 'BOOKMARK'>, obj: KubeObject): void;
}

const isGone = (obj: any) => obj?.code === 410 || obj?.reason === 'Expired' || obj?.reason === 'Gone';

export function informer(
  client: KubeClient,
  ref: ResourceRef,
  labelSelector: string,
  handlers: InformerHandlers,
  { retryMs, log }: { retryMs: number; log: Logger },
): Informer {
  let stopped = false;
  let controller: AbortController | undefined;
  let resourceVersion = '';
  let wake: (() => void) | undefined;
  let markReady!: () => void;
  let failReady!: (e: unknown) => void;
  const ready = new Promise<void>((resolve, reject) => ((markReady = resolve), (failReady = reject)));
  ready.catch(() => {}); // observed by callers who await it

  const relist = async () => {
    const { items, resourceVersion: rv } = await client.list(ref, labelSelector);
    resourceVersion = rv;
    handlers.onList(items);
  };

  /** Opens one watch; `opened` resolves when the server answered, `ended` when the stream is over. */
  const watchOnce = () => {
    let gone = false;
    let ended!: Promise<'ended' | 'gone' | 'error'>;
    const opened = new Promise<void>((resolveOpen, rejectOpen) => {
      ended = new Promise((resolveEnd) => {
        client
          .watch(
            ref,
            { resourceVersion, labelSelector },
            (type, obj) => {
              if (type === 'ERROR') {
                if (isGone(obj)) gone = true;
                return;
              }
              if (obj?.metadata?.resourceVersion) resourceVersion = obj.metadata.resourceVersion;
              if (type !== 'BOOKMARK') handlers.onEvent(type, obj);
            },
            (err) => resolveEnd(gone ? 'gone' : err && !stopped ? 'error' : 'ended'),
          )
          .then((c) => {
            controller = c;
            if (stopped) c.abort();
            resolveOpen();
          }, rejectOpen);
      });
    });
    return { opened, ended };
  };

  const loop = async () => {
    let needList = true;
    let first = true;
    while (!stopped) {
      try {
        if (needList) await relist();
        needList = false;
        const { opened, ended } = watchOnce();
        await opened;
        if (first) {
          first = false;
          markReady();
        }
        const how = await ended;
        needList = how !== 'ended';
        if (how === 'error') log.warn({ resource: ref.plural }, 'watch broke; relisting');
      } catch (e) {
        if (first) {
          failReady(e);
          first = false;
        }
        log.warn({ err: e, resource: ref.plural }, 'watch failed; retrying');
        needList = true;
      }
      if (stopped) break;
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, needList ? retryMs : 0).unref();
      });
    }
  };

  void loop();
  return {
    ready,
    stop() {
      stopped = true;
      controller?.abort();
      wake?.();
    },
  };
}

export type Verdict = { done: true } | { failed: string } | undefined;

/**
 * Resolves once `check(obj)` says done for the named object; rejects with DeployFailedError when it says
 * failed, or NotReadyError after `timeoutMs`. `initial` (e.g. the apply response) is checked first and its
 * resourceVersion is where the watch starts, so no change in between is missed.
 */
export async function waitFor(
  client: KubeClient,
  ref: ResourceRef,
  name: string,
  initial: KubeObject | undefined,
  check: (obj: KubeObject) => Verdict,
  { timeoutMs, what, signal }: { timeoutMs: number; what: string; signal?: AbortSignal },
): Promise<KubeObject> {
  const first = initial && check(initial);
  if (first && 'done' in first) return initial!;
  if (first && 'failed' in first) throw new DeployFailedError(what, first.failed);
  let resourceVersion = initial?.metadata.resourceVersion;
  let controller: AbortController | undefined;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    return await new Promise<KubeObject>((resolve, reject) => {
      let settled = false;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        fn();
        controller?.abort();
      };
      timer = setTimeout(() => finish(() => reject(new NotReadyError(what, timeoutMs))), timeoutMs);
      onAbort = () => finish(() => reject(signal!.reason));
      signal?.addEventListener('abort', onAbort, { once: true });
      const open = () => {
        if (settled) return;
        client
          .watch(
            ref,
            { fieldSelector: `metadata.name=${name}`, ...(resourceVersion ? { resourceVersion } : {}) },
            (type, obj) => {
              if (obj?.metadata?.resourceVersion) resourceVersion = obj.metadata.resourceVersion;
              if (type === 'DELETED') return finish(() => reject(new DeployFailedError(what, 'it was deleted')));
              if (type !== 'ADDED' && type !== 'MODIFIED') return;
              const v = check(obj);
              if (v && 'done' in v) finish(() => resolve(obj));
              else if (v && 'failed' in v) finish(() => reject(new DeployFailedError(what, v.failed)));
            },
            () => {
              if (!settled) setTimeout(open, 100).unref(); // the server closed the watch: re-open from the last version
            },
          )
          .then(
            (c) => {
              controller = c;
              if (settled) c.abort();
            },
            (e) => finish(() => reject(e)),
          );
      };
      open();
    });
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}
