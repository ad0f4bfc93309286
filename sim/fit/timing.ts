/** Interleaved timing of probes for the fitters (the model fits and the host fit). */

/**
 * Times every probe `repeats` times in interleaved rounds (probe 1, 2, …, then again), after one warm-up each, and
 * returns each probe's median: on a shared machine a burst of someone else's load then hits every point alike
 * instead of bending the fitted line.
 */
export async function medianMsEach(repeats: number, probes: ReadonlyArray<() => Promise<unknown>>): Promise<number[]> {
  for (const p of probes) await p(); // warm-up: session allocation and first-run arenas
  const ms = probes.map(() => [] as number[]);
  for (let r = 0; r < repeats; r++) {
    for (let i = 0; i < probes.length; i++) {
      const t0 = performance.now();
      await probes[i]!();
      ms[i]!.push(performance.now() - t0);
    }
  }
  return ms.map((m) => m.sort((a, b) => a - b)[Math.floor(m.length / 2)]!);
}
