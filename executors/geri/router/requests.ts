/**
 * Geri's HTTP request bodies (the reference's ImageGeriRequest / AudioGeriRequest), validated with limits
 * taken from the model's manifest, so an out-of-range size is a 422 naming the field before anything runs.
 */
import { z } from 'zod';
import type { Manifest } from '../../models/manifest.js';

/** A sidecar data id (DataForward ids are lowercase hex; the sidecar takes any 1..256 characters). */
const dataId = z.string().min(1).max(256);

export function imageRequestSchema(gen: NonNullable<Manifest['generation']['image']>) {
  return z.object({
    embedding_data_id: dataId,
    height: z.number().int().positive().max(gen.max_height),
    width: z.number().int().positive().max(gen.max_width),
    num_inference_steps: z.number().int().positive().max(gen.max_steps).default(gen.default_steps),
    /** Leading embedding rows to ignore. */
    skip_tokens: z.number().int().nonnegative().default(0),
  });
}
export type ImageRequest = z.infer<ReturnType<typeof imageRequestSchema>>;

/** null (what the reference's descriptor sends for "unset") and absent both mean the model's default. */
export const audioRequestSchema = z.object({
  embedding_data_id: dataId,
  chunk_size: z.number().int().positive().max(100_000).nullish().transform((v) => v ?? undefined),
  left_context_size: z.number().int().nonnegative().max(100_000).nullish().transform((v) => v ?? undefined),
});
export type AudioRequest = z.infer<typeof audioRequestSchema>;

/** The embedding id of a body that may not validate, so its data can still be freed. */
export function dataIdOf(body: unknown): string | undefined {
  const id = (body as { embedding_data_id?: unknown } | null)?.embedding_data_id;
  return dataId.safeParse(id).success ? (id as string) : undefined;
}
