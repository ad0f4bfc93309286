/**
 * Eric's options: what main.ts reads from the command line and the environment, validated once at start-up
 * (`compileEricOptions`), then frozen. Defaults are documented per field.
 */
import { z } from 'zod';
import { validatePrivateAllowlist } from '../../lib/fetch-guard.js';
import { describeIssues } from '../models/manifest.js';
import { hopBodyLimitBytes } from '../../lib/body-limit.js';

export const MODALITIES = ['image', 'video', 'audio'] as const;
export type EricModality = (typeof MODALITIES)[number];

export const EricOptions = z.object({
  /** The base model id (the LLM whose embeddings this encoder produces). */
  modelId: z.string().min(1),
  /** More model ids sharing the same encoder, each with its own projector. @default [] */
  adapterModelIds: z.array(z.string().min(1)).default([]),
  modality: z.enum(MODALITIES),
  /** Tensor-parallel degree = workers; must equal the number of sidecar ranks when ranks are given. @default ranks.length or 1 */
  tpSize: z.number().int().positive().optional(),
  /** Items per batch; unset = unlimited (the reference's default). */
  maxBatchSize: z.number().int().positive().optional(),
  /** Where model folders are found. @default $CORNSERVE_MODELS_DIR or <repo>/.models */
  modelsDir: z.string().optional(),
  /** Accept file: URLs. @default false */
  allowFileUrls: z.boolean().default(false),
  /** Hosts http(s) URLs may point to (`*.example.com` for sub-domains); empty = any. @default [] */
  urlAllowlist: z.array(z.string().min(1)).default([]),
  /**
   * What http(s) URLs may reach although not public (loopback, private, link-local, metadata…): CIDRs, addresses
   * or host names (lib/fetch-guard.ts). @default $CORNSERVE_ALLOW_PRIVATE_URLS (comma-separated) or [] (none)
   */
  privateUrlAllowlist: z.array(z.string().min(1)).default([]),
  /** This executor's sidecar ranks (CORNSERVE_SIDECAR_RANKS). @default [0, ..., tpSize-1] */
  ranks: z.array(z.number().int().nonnegative()).optional(),
  /** The node sidecar: a unix socket path, `unix:<path>`, or its HTTP URL (CORNSERVE_SIDECAR_URL). @default none: no forwarding */
  sidecar: z.string().optional(),
  host: z.string().default('127.0.0.1'),
  port: z.number().int().nonnegative().default(8000),
  /** Preprocessing threads. @default 2 */
  preprocessThreads: z.number().int().positive().default(2),
  /** Largest accepted input (bytes, after base64 decoding) per item. @default 32 MiB */
  maxInputBytes: z.number().int().positive().default(32 << 20),
  /** Largest accepted request body. @default what the gateway accepts, with room (lib/body-limit.ts) */
  maxBodyBytes: z.number().int().positive().default(() => hopBodyLimitBytes()),
  /** Most frames a video may have before sampling. @default 4096 */
  maxVideoFrames: z.number().int().positive().default(4096),
  /** Time limit of one http(s) fetch. @default 5000 (the reference's) */
  fetchTimeoutMs: z.number().int().positive().default(5_000),
  /** Deadline of a request that carries none (x-cornserve-deadline). @default 300000 */
  requestTimeoutMs: z.number().int().positive().default(300_000),
  /** Batches handed to the workers at once. @default 2 */
  maxInflightBatches: z.number().int().positive().default(2),
  executorId: z.string().optional(),
});
export type EricOptionsInput = z.input<typeof EricOptions>;

export type CompiledEricOptions = Readonly<Omit<z.output<typeof EricOptions>, 'ranks' | 'tpSize'> & {
  ranks: readonly number[];
  tpSize: number;
  /** modelId first, then the adapters. */
  modelIds: readonly string[];
}>;

export function compileEricOptions(input: EricOptionsInput): CompiledEricOptions {
  const r = EricOptions.safeParse(input);
  if (!r.success) throw new Error(`invalid Eric options: ${describeIssues(r.error)}`);
  const o = r.data;
  validatePrivateAllowlist(o.privateUrlAllowlist);
  const tpSize = o.tpSize ?? o.ranks?.length ?? 1;
  const ranks = [...(o.ranks ?? Array.from({ length: tpSize }, (_, i) => i))].sort((a, b) => a - b);
  if (ranks.length !== tpSize) throw new Error(`--tp-size ${tpSize} must equal the number of sidecar ranks (${ranks.join(',')})`);
  if (new Set(ranks).size !== ranks.length) throw new Error(`sidecar ranks must be distinct, got ${ranks.join(',')}`);
  const modelIds = [...new Set([o.modelId, ...o.adapterModelIds])];
  return Object.freeze({ ...o, tpSize, ranks, modelIds });
}
