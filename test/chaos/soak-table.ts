/** The soak's Markdown table (docs/reliability.md): p99 and resident memory per minute, the verdict with slopes. Pure. */
import type { SoakResults } from '../../bench/report/results.js';

const mib = (b: number | undefined) => (b === undefined ? '–' : (b / 1024 / 1024).toFixed(0));
/** A process label without its pid: a restarted process keeps its row. */
const role = (label: string) => label.replace(/ \[\d+\]$/, '');

/** The Markdown the docs carry: p99 and every process's RSS per minute, then the verdict with slopes. */
export function soakTable(soak: SoakResults): string {
  const ms = soak.minutes;
  const head = `| | ${ms.map((m) => `min ${m.minute}`).join(' | ')} |\n|---|${ms.map(() => '---:').join('|')}|`;
  const p99 = `| p99 E2EL (ms) | ${ms.map((m) => (m.p99E2elMs === null ? '–' : m.p99E2elMs.toFixed(0))).join(' | ')} |`;
  const done = `| completed / failed | ${ms.map((m) => `${m.completed} / ${m.failed}`).join(' | ')} |`;
  // One row per process, but tsx's esbuild services (one per node process, not platform code) summed in one.
  const rowOf = (label: string) => (/^esbuild\b/.test(role(label)) ? 'esbuild services of tsx' : label);
  const rowKeys = [...new Set(ms.flatMap((m) => Object.keys(m.rssBytes).map(rowOf)))].sort((a, b) => role(a).localeCompare(role(b)));
  const of = (m: SoakResults['minutes'][number], key: string) => {
    const v = Object.entries(m.rssBytes).filter(([l]) => rowOf(l) === key).map(([, b]) => b);
    return v.length ? mib(v.reduce((a, b) => a + b, 0)) : '–';
  };
  const rows = rowKeys.map((k) => `| ${role(k)} (MiB) | ${ms.map((m) => of(m, k)).join(' | ')} |`);
  const total = `| all processes (MiB) | ${ms.map((m) => mib(Object.values(m.rssBytes).reduce((a, b) => a + b, 0))).join(' | ')} |`;
  const counted = ms.length >= 3 ? ms.length - 2 : Math.max(1, ms.length - 1); // minutes between the verdict's first and last
  const growth = soak.verdict.growing.map((g) => `${role(g.process)} grows ${mib(g.fromBytes)} → ${mib(g.toBytes)} MiB, ${((g.toBytes - g.fromBytes) / 1024 / 1024 / counted).toFixed(1)} MiB/min`);
  const verdict = soak.verdict.memoryFlat && soak.verdict.p99Flat ? 'flat' : [...growth, ...(soak.verdict.p99Flat ? [] : ['p99 grows'])].join('; ');
  return [head, p99, done, total, ...rows, '', `Verdict: **${verdict}** (${soak.verdict.message})`].join('\n');
}

