/** Where a command prints: `out` for results (stdout), `err` for progress and problems (stderr). Tests pass arrays. */
export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
}
