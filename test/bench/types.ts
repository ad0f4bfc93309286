import { Agent, request } from 'node:http';

/** What every benchmark returns: its figure next to a baseline measured in the same run. */
export interface BenchResult {
  name: string;
  figure: number;
  unit: string;
  baseline: number;
  baselineName: string;
  /** figure / baseline, or baseline / figure: whichever reads "higher is better" — say which in notes. */
  ratio: number;
  target?: string;
  notes?: string;
}

export type BenchModule = { run(): Promise<BenchResult[]> };

const fmt = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(3));

export function formatTable(results: BenchResult[]): string {
  const rows = results.map((r) => [r.name, `${fmt(r.figure)} ${r.unit}`, `${fmt(r.baseline)} ${r.unit} (${r.baselineName})`, fmt(r.ratio), r.target ?? '']);
  const head = ['benchmark', 'figure', 'baseline (same run)', 'ratio', 'target'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

/** CPU ms (user + system, every thread) this process used so far. Other processes: processCpuMs (bench/client/proc.ts). */
export function ownCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** The middle value (upper middle for an even count). */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Medians of `n` alternating timed calls of `op` and `baseline` (ms per call, divided by `perItem`), after
 * `warmup` calls of each.
 */
export async function alternating(n: number, op: () => Promise<unknown>, baseline: () => Promise<unknown>,
  { warmup = 3, perItem = 1 }: { warmup?: number; perItem?: number } = {}): Promise<{ figure: number; baseline: number }> {
  for (let i = 0; i < warmup; i++) { await op(); await baseline(); }
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < n; i++) {
    let t0 = performance.now();
    await op();
    a.push((performance.now() - t0) / perItem);
    t0 = performance.now();
    await baseline();
    b.push((performance.now() - t0) / perItem);
  }
  return { figure: median(a), baseline: median(b) };
}

/**
 * A lean keep-alive node:http client (the kind the platform uses between its own processes: the dispatcher's
 * executor calls, the app function's CloudEvents), so a baseline and the path it is compared with pay for the
 * same client. Posts JSON and reads the whole reply.
 */
export function keepAlivePoster(url: string, maxSockets = 64) {
  const agent = new Agent({ keepAlive: true, maxSockets });
  const { hostname, port } = new URL(url);
  return (path: string, body: string) => new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request({ agent, hostname, port, path, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => { text += d; }).on('end', () => resolve({ status: res.statusCode ?? 0, text })).on('error', reject);
    });
    req.on('error', reject).end(body);
  });
}

/** Items/s of `step` (`per` items per call) run back to back by `loops` concurrent loops for `ms`. */
export async function rate(ms: number, loops: number, per: number, step: () => Promise<void>): Promise<{ rate: number; items: number }> {
  const end = performance.now() + ms;
  let items = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: loops }, async () => {
    while (performance.now() < end) { await step(); items += per; }
  }));
  return { rate: items / ((performance.now() - t0) / 1000), items };
}

/** Runs `fn` calls one at a time, in call order (a single onnxruntime thread, as in an executor's worker). */
export function serial() {
  let last: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const next = last.then(fn, fn);
    last = next.catch(() => undefined);
    return next;
  };
}
