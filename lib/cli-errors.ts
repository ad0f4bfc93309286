/** CLI errors: printed as one line on stderr, exit code 1 (2 for usage errors, which commander handles). */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(message: string, readonly status?: number) {
    super(message);
  }
}
