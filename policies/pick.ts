/**
 * The dispatcher's executor pick, as a pure function (the live Router and the simulator both call it):
 * among a task's ready executors the one with the fewest outstanding requests wins; ties rotate by `turn`
 * (the caller keeps one counter per task and advances it on every pick).
 */
export function pickLeastOutstanding<T extends { readonly outstanding: number }>(ready: readonly T[], turn: number): T | undefined {
  if (ready.length === 0) return undefined;
  let least = Infinity;
  for (const r of ready) if (r.outstanding < least) least = r.outstanding;
  const ties = ready.filter((r) => r.outstanding === least);
  return ties[turn % ties.length];
}
