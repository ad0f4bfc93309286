import { z } from 'zod';
import { Stream, UnitTask, registerTaskClass, streamOf } from '../sdk/index.js';

export const echoConfigSchema = z.object({
  /** Simulated work per request on the echo executor, in ms (0 = answer at once). */
  serviceTimeMs: z.number().int().nonnegative().default(0),
  /**
   * Requests one echo executor serves at once; the rest queue inside it (FIFO). With a service time this gives
   * each executor an exact capacity of maxConcurrency ÷ serviceTimeMs (autoscaling tests and benchmarks).
   * Unset = no limit.
   */
  maxConcurrency: z.number().int().positive().max(100_000).optional(),
});

export const echoInputSchema = z.object({ text: z.string(), chunks: z.number().int().positive().max(10_000).optional() });
export type EchoInput = z.infer<typeof echoInputSchema>;
export const echoOutputSchema = z.object({ echo: z.string() });
export const echoChunkSchema = z.object({ echo: z.string(), index: z.number().int() });
export type EchoChunk = z.infer<typeof echoChunkSchema>;

/** Root of the echo tasks (the platform-overhead benchmark and the control-plane tests use them). */
export abstract class EchoBaseTask<O> extends UnitTask<typeof echoConfigSchema, EchoInput, O> {
  static override readonly configSchema = echoConfigSchema;
  readonly inputSchema = echoInputSchema;
  get name(): string {
    return `echo-${this.config.serviceTimeMs}ms${this.config.maxConcurrency === undefined ? '' : `-x${this.config.maxConcurrency}`}`;
  }
}

/** `{text}` in, `{echo: text}` out. */
export class EchoTask extends EchoBaseTask<z.infer<typeof echoOutputSchema>> {
  readonly outputSchema = echoOutputSchema;
  makeRecordOutput() {
    return { echo: '' };
  }
}
registerTaskClass(EchoTask);

/** `{text, chunks: n}` in, a stream of n `{echo: text, index: i}` chunks out. Same deployment as EchoTask. */
export class EchoStreamTask extends EchoBaseTask<Stream<EchoChunk>> {
  readonly outputSchema = streamOf(echoChunkSchema);
  makeRecordOutput() {
    return Stream.placeholder(echoChunkSchema);
  }
}
registerTaskClass(EchoStreamTask);
