/**
 * The OpenAI chat-completions wire format as this executor speaks it: the request (the SDK's chat request
 * schema plus the executor-only `vllm_xargs` for hidden-state forwarding, as the reference's vLLM fork takes
 * them) and the response objects (chunks for SSE, one completion otherwise).
 */
import { randomBytes } from 'node:crypto';
import type { Response } from 'express';
import { z } from 'zod';
import { chatRequestSchema } from '../../lib/openai.js';
import { llmErrors } from './errors.js';
import type { FinishReason } from './sequence.js';

/** Keys of `vllm_xargs` for LLMEmbeddingTask (names as in the reference). */
export const HIDDEN_STATES_ID = 'cornserve_hidden_states_forward_id';
export const HIDDEN_STATES_RANKS = 'cornserve_hidden_states_forward_ranks';
/** Ours: forward the generated tokens' hidden states as a sidecar stream (one chunk per token) instead of the prompt's. */
export const HIDDEN_STATES_GENERATED = 'cornserve_hidden_states_forward_generated';

const rankGroups = z.array(z.array(z.number().int().nonnegative()).min(1)).min(1);

export const executorRequestSchema = chatRequestSchema.extend({
  n: z.number().int().positive().optional(),
  vllm_xargs: z.record(z.string(), z.unknown()).optional(),
});
export type ExecutorRequest = z.infer<typeof executorRequestSchema>;

/** A request body as ExecutorRequest, or LLM_BAD_REQUEST naming every bad field (param = the first). */
export function parseExecutorRequest(body: unknown): ExecutorRequest {
  const r = executorRequestSchema.safeParse(body);
  if (r.success) return r.data;
  const param = r.error.issues[0]!.path.map(String).join('.') || null;
  throw llmErrors.badRequest(r.error.issues.map((i) => `${i.path.map(String).join('.') || '(body)'}: ${i.message}`).join('; '), param);
}

/** One SSE event's text, `data: …` (a string as is, anything else as JSON). */
const sseEvent = (data: unknown) => `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

/**
 * The writer of one streamed completion's SSE events (a string as is, anything else as JSON). The role chunk
 * waits for the first event and leaves in the same write, with the response headers: the first token costs one
 * write, and the client one read.
 */
export function sseAnswer(res: Response, chunks: ChunkWriter): (data: unknown) => void {
  let head = sseEvent(chunks.role());
  return (data) => {
    res.write(head + sseEvent(data));
    head = '';
  };
}

/**
 * The hidden-state forward a request asks for, if any. Ranks may be a JSON string (the reference sends str(list)).
 * `generated`: the generated tokens' states, streamed while the answer is generated; else the prompt's, prefill only.
 */
export function hiddenStatesForward(req: ExecutorRequest): { id: string; dstGroups: number[][]; generated: boolean } | undefined {
  const x = req.vllm_xargs ?? {};
  const id = x[HIDDEN_STATES_ID];
  if (id === undefined) return undefined;
  if (typeof id !== 'string' || !/^[0-9a-f]{1,64}$/.test(id)) throw llmErrors.badRequest(`vllm_xargs.${HIDDEN_STATES_ID} must be a lowercase hex id`, `vllm_xargs.${HIDDEN_STATES_ID}`);
  let ranks = x[HIDDEN_STATES_RANKS];
  if (typeof ranks === 'string') {
    try {
      ranks = JSON.parse(ranks);
    } catch {
      ranks = undefined;
    }
  }
  const r = rankGroups.safeParse(ranks);
  if (!r.success) throw llmErrors.badRequest(`vllm_xargs.${HIDDEN_STATES_RANKS} must be a list of rank groups, e.g. [[2]]`, `vllm_xargs.${HIDDEN_STATES_RANKS}`);
  const generated = x[HIDDEN_STATES_GENERATED];
  if (generated !== undefined && generated !== true && generated !== 'true' && generated !== false && generated !== 'false') {
    throw llmErrors.badRequest(`vllm_xargs.${HIDDEN_STATES_GENERATED} must be true or false`, `vllm_xargs.${HIDDEN_STATES_GENERATED}`);
  }
  return { id, dstGroups: r.data, generated: generated === true || generated === 'true' };
}

export interface Usage { prompt_tokens: number; completion_tokens: number; total_tokens: number }

export const usage = (prompt: number, completion: number): Usage => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });

export const completionId = () => `chatcmpl-${randomBytes(12).toString('hex')}`;

/**
 * Builds the SSE payloads of one streamed completion (same id / created / model on each). Content chunks are
 * the hot path (one per token per request): their fixed parts are serialised once.
 */
export class ChunkWriter {
  readonly created = Math.floor(Date.now() / 1000);
  private readonly contentHead: string;
  private readonly contentTail: string;

  constructor(readonly id: string, readonly model: string, private readonly includeUsage: boolean) {
    const [head, tail] = JSON.stringify(this.chunk([{ index: 0, delta: { content: '\u0000' }, logprobs: null, finish_reason: null }])).split('"\\u0000"');
    this.contentHead = head!;
    this.contentTail = tail!;
  }

  private chunk(choices: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices,
      ...(this.includeUsage ? { usage: null } : {}), ...extra,
    };
  }

  role(): string {
    return JSON.stringify(this.chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]));
  }

  content(text: string): string {
    return this.contentHead + JSON.stringify(text) + this.contentTail;
  }

  finish(reason: FinishReason): string {
    return JSON.stringify(this.chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: reason }]));
  }

  usage(u: Usage): string {
    return JSON.stringify(this.chunk([], { usage: u }));
  }
}

export function completion(id: string, model: string, text: string, reason: FinishReason, u: Usage, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model,
    choices: [{ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: reason }],
    usage: u, ...extra,
  };
}

/**
 * Max completion tokens for a prompt of `promptTokens`: what the request asks (it must fit), else the rest of the
 * context. `context` names whose context it is in the refusal ("this model's", "this executor's … per sequence").
 */
export function maxTokensFor(
  ctx: number, asked: { max_completion_tokens?: number | undefined; max_tokens?: number | undefined }, promptTokens: number,
  context: { owner: string; per?: string },
): number {
  const per = context.per ? ` ${context.per}` : '';
  if (promptTokens >= ctx) throw llmErrors.contextTooLong(`the prompt has ${promptTokens} tokens; ${context.owner} context is ${ctx}${per}`);
  const max = asked.max_completion_tokens ?? asked.max_tokens;
  if (max === undefined) return ctx - promptTokens;
  if (promptTokens + max > ctx) throw llmErrors.contextTooLong(`prompt (${promptTokens} tokens) + max tokens (${max}) exceed ${context.owner} context of ${ctx} tokens${per}`);
  return max;
}
