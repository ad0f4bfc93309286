/**
 * No orphans: while any local platform has children, this process kills them when it exits and stops them
 * when it receives SIGTERM / SIGINT / SIGHUP, then exits the way the default handler would (128 + signal number).
 * If someone else listens for that signal (e.g. `cornserve up`, which drains its requests first), stopping and
 * exiting are theirs; the 'exit' hook still kills what they left. A second signal while stopping kills every child at once.
 */
import { constants } from 'node:os';

export interface Guarded {
  /** Synchronous SIGKILL of every child (the 'exit' hook cannot wait). */
  killAll(): void;
  /** Graceful stop of every child. */
  shutdown(): Promise<void>;
}

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
type Sig = (typeof SIGNALS)[number];

const live = new Set<Guarded>();
let stopping = false;

const onExit = () => {
  for (const g of live) g.killAll();
};

const onSignal = (sig: Sig) => {
  const someoneElseExits = process.listenerCount(sig) > 1;
  if (someoneElseExits) return;
  if (stopping) {
    onExit();
    process.exit(128 + constants.signals[sig]);
  }
  stopping = true;
  void Promise.allSettled([...live].map((g) => g.shutdown())).then(() => {
    stopping = false;
    process.exit(128 + constants.signals[sig]);
  });
};

/** Registers `g` until the returned function is called. Hooks are installed only while something is registered. */
export function guardChildren(g: Guarded): () => void {
  if (live.size === 0) {
    process.on('exit', onExit);
    for (const s of SIGNALS) process.on(s, onSignal);
  }
  live.add(g);
  return () => {
    if (!live.delete(g) || live.size > 0) return;
    process.off('exit', onExit);
    for (const s of SIGNALS) process.off(s, onSignal);
  };
}
