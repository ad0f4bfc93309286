/**
 * The hidden states of a request's generated tokens, streamed to their consumers through the sidecar as they are
 * produced (`vllm_xargs.cornserve_hidden_states_forward_generated`; AnyToAnyTask's speech): chunk i is the final
 * hidden state [1, hidden] that token i was sampled from, sent as soon as the token exists; `close` ends the stream
 * after the last token (the consumer then knows the count), `fail` tells the consumers the producer gave up.
 */
import type { SidecarClient } from '../../sidecar/client/client.js';
import { tensor } from '../../sidecar/tensor.js';
import { llmErrors } from './errors.js';

export class HiddenStateStream {
  private sent = 0;
  /** Sends not settled yet (each removes itself when it settles, so a long generation holds only those in flight). */
  private readonly pending = new Set<Promise<void>>();
  private error: Error | undefined;
  private ended = false;

  constructor(
    private readonly sidecar: SidecarClient,
    readonly id: string,
    private readonly dst: number[][],
    private readonly deadline: number,
  ) {}

  /** Chunks handed to the sidecar so far. */
  get chunks(): number {
    return this.sent;
  }

  /** Sends one token's hidden state (copied: the step's buffer is not ours to keep). */
  push(hidden: Float32Array): void {
    if (this.ended) return;
    const chunk = this.sent++;
    const data = hidden.slice(); // a plain copy (the send reads it after an await)
    const sent: Promise<void> = this.sidecar.send(tensor('f32', [1, data.length], data), this.id, this.dst, { stream: true, chunk, deadline: this.deadline })
      .catch((e: Error) => void (this.error ??= e))
      .finally(() => this.pending.delete(sent));
    this.pending.add(sent);
  }

  /** Waits for every send, then ends the stream after the chunks sent; a failed send fails it instead. */
  async close(): Promise<void> {
    this.ended = true;
    await Promise.all([...this.pending]);
    if (this.error) {
      await this.fail(`a hidden state could not be sent: ${this.error.message}`);
      throw llmErrors.sidecar(`sending the hidden states ${this.id} failed: ${this.error.message}`, this.error);
    }
    try {
      await this.sidecar.closeStream(this.id, this.sent, this.dst, { deadline: this.deadline });
    } catch (e) {
      throw llmErrors.sidecar(`closing the hidden-state stream ${this.id} failed: ${(e as Error).message}`, e);
    }
  }

  /** The generation ended without an answer: consumers waiting for the next chunk get the producer's failure. */
  async fail(reason: string): Promise<void> {
    this.ended = true;
    await Promise.all([...this.pending]);
    await this.sidecar.fail(this.id, reason, this.dst).catch(() => undefined);
  }
}
