/**
 * The discrete-event core: a virtual clock and a binary min-heap of events ordered by (time, insertion
 * order), so events at the same instant run in the order they were scheduled (deterministic for a seed).
 */
export type Action = () => void;

export class EventQueue {
  #now = 0;
  #seq = 0;
  #times: number[] = [];
  #seqs: number[] = [];
  #actions: Action[] = [];
  /** Events run so far. */
  processed = 0;

  /** Virtual time in ms since the run's start. */
  get now(): number {
    return this.#now;
  }

  get size(): number {
    return this.#times.length;
  }

  /** Runs `action` `delayMs` from now (a negative or NaN delay is a bug in a model: refused). */
  after(delayMs: number, action: Action): void {
    if (!(delayMs >= 0)) throw new RangeError(`an event cannot be scheduled ${delayMs} ms from now`);
    this.at(this.#now + delayMs, action);
  }

  at(t: number, action: Action): void {
    const times = this.#times;
    const seqs = this.#seqs;
    const actions = this.#actions;
    let i = times.length;
    const s = this.#seq++;
    times.push(t);
    seqs.push(s);
    actions.push(action);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (times[p]! < t || (times[p] === t && seqs[p]! < s)) break;
      times[i] = times[p]!;
      seqs[i] = seqs[p]!;
      actions[i] = actions[p]!;
      i = p;
    }
    times[i] = t;
    seqs[i] = s;
    actions[i] = action;
  }

  /** Runs events in order until none is left, the next one is after `untilMs`, or `maxEvents` have run. */
  run(untilMs = Infinity, maxEvents = Infinity): void {
    for (let n = 0; n < maxEvents && this.#times.length > 0 && this.#times[0]! <= untilMs; n++) {
      const t = this.#times[0]!;
      const action = this.#pop();
      this.#now = t;
      this.processed++;
      action();
    }
  }

  #pop(): Action {
    const times = this.#times;
    const seqs = this.#seqs;
    const actions = this.#actions;
    const top = actions[0]!;
    const lastT = times.pop()!;
    const lastS = seqs.pop()!;
    const lastA = actions.pop()!;
    const n = times.length;
    if (n === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && (times[r]! < times[l]! || (times[r] === times[l] && seqs[r]! < seqs[l]!))) c = r;
      if (lastT < times[c]! || (lastT === times[c] && lastS < seqs[c]!)) break;
      times[i] = times[c]!;
      seqs[i] = seqs[c]!;
      actions[i] = actions[c]!;
      i = c;
    }
    times[i] = lastT;
    seqs[i] = lastS;
    actions[i] = lastA;
    return top;
  }
}
