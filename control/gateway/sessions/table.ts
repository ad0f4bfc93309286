/**
 * SessionTable: which interactive sessions are alive and which unit tasks each holds. Plain data with an
 * injected clock (no I/O, no timers): Sessions asks it which sessions expired and does the releasing.
 */
export interface SessionEntry {
  id: string;
  /** Epoch ms of the last frame (any frame counts as a heartbeat). */
  lastSeen: number;
  /** taskId -> the task's name, for the tasks this session declared used (each counted once). */
  tasks: Map<string, string>;
}

export class SessionTable {
  readonly #sessions = new Map<string, SessionEntry>();

  constructor(readonly timeoutMs: number) {}

  open(id: string, now: number): SessionEntry {
    const entry: SessionEntry = { id, lastSeen: now, tasks: new Map() };
    this.#sessions.set(id, entry);
    return entry;
  }

  get(id: string): SessionEntry | undefined {
    return this.#sessions.get(id);
  }

  /** Marks the session alive; false when it is unknown (never opened, closed, or expired). */
  touch(id: string, now: number): boolean {
    const entry = this.#sessions.get(id);
    if (!entry) return false;
    entry.lastSeen = Math.max(entry.lastSeen, now);
    return true;
  }

  /** Sessions silent for longer than the timeout. */
  expired(now: number): string[] {
    return [...this.#sessions.values()].filter((s) => now - s.lastSeen > this.timeoutMs).map((s) => s.id);
  }

  remove(id: string): SessionEntry | undefined {
    const entry = this.#sessions.get(id);
    this.#sessions.delete(id);
    return entry;
  }

  ids(): string[] {
    return [...this.#sessions.keys()];
  }
}
