/**
 * Progress while a run sends: a cli-progress bar on a terminal (stderr), plain lines every few seconds
 * otherwise (cli-progress prints nothing when stderr is not a TTY, so CI logs get lines instead).
 */
import cliProgress from 'cli-progress';
import type { Io } from '../../lib/io.js';

export interface Progress {
  sent(): void;
  done(ok: boolean): void;
  stop(): void;
}

export function startProgress(limit: { count?: number; durationMs?: number }, io: Io, o: { tty?: boolean; lineEveryMs?: number } = {}): Progress {
  const t0 = performance.now();
  let sent = 0;
  let done = 0;
  let failed = 0;
  const elapsedS = () => (performance.now() - t0) / 1000;
  const byCount = limit.count !== undefined;
  const total = byCount ? limit.count! : Math.round(limit.durationMs! / 1000);
  const value = () => (byCount ? done : Math.min(total, Math.floor(elapsedS())));
  const fields = () => ({ sent, failed, inflight: sent - done, elapsed: elapsedS().toFixed(0) });

  if (o.tty ?? process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      { format: `{bar} {value}/{total} ${byCount ? 'done' : 's'} | sent {sent} | in flight {inflight} | failed {failed} | {elapsed} s`, hideCursor: true, clearOnComplete: false },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0, fields());
    const timer = setInterval(() => bar.update(value(), fields()), 250);
    return {
      sent: () => void sent++,
      done: (ok) => { done++; if (!ok) failed++; },
      stop: () => { clearInterval(timer); bar.update(value(), fields()); bar.stop(); },
    };
  }
  const line = () => io.err(`  ${elapsedS().toFixed(0)} s: sent ${sent}, done ${done}${byCount ? `/${total}` : ''}, failed ${failed}, in flight ${sent - done}`);
  const timer = setInterval(line, o.lineEveryMs ?? 5000);
  return {
    sent: () => void sent++,
    done: (ok) => { done++; if (!ok) failed++; },
    stop: () => { clearInterval(timer); line(); },
  };
}
