/**
 * The image-embedding app: images in, their embeddings out as JSON, from a CLIP/SigLIP vision tower in the
 * Hugging Face layout served by Eric.
 *
 *   {"image_urls": ["data:image/png;base64,..."]}  →  {"model": "tiny-clip", "data": [{"index": 0, "embedding": [..48 floats]}]}
 *
 * MODEL_ID names the tower folder: `cornserve up --models DIR` with DIR/tiny-clip (copy `.models/tiny-clip`, or an
 * export such as `optimum-cli export onnx --model openai/clip-vit-base-patch32 ...` renamed; change MODEL_ID to its
 * folder name). The EncoderTask's `return_embeddings` input brings the tower's pooled output (CLIP image_embeds,
 * SigLIP pooler_output) back to this function instead of forwarding it to another executor.
 */
import { z } from 'zod';
import { defineApp } from '../sdk/index.js';
import { EncoderTask } from '../tasks/encoder.js';

const MODEL_ID = 'tiny-clip';
/** An 8x8 PNG (test/helpers/media.ts makeImage(8, 8, {seed: 1})): the sample request's image. */
const EXAMPLE_IMAGE =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAmElEQVQImQXBMRHEMAwEwCtNwAQ86k1AAGQCJuD6ZkIgBL5T9UwERt0TCIEU+l0AP8FjeInm6IGRmAUF5BF5TRqlu4yQmaIlC7BXrJl12nCbYZq2yjbAJuzGQU6nBldyFw/gXXyYT7q6r/CdfsovIIbEtFDG8tgRJ+OquIGckmq5mNvzRF6Zd+UHKJVaVpt1vK6oO+tT9f0D2HVUkZ8arFEAAAAASUVORK5CYII=';

const encoder = new EncoderTask({ modality: 'image', modelIds: [MODEL_ID], maxBatchSize: 8 });

export default defineApp({
  name: 'embed',
  tasks: { encoder },
  request: z.object({
    image_urls: z.array(z.string().min(1)).min(1).max(64).meta({ examples: [[EXAMPLE_IMAGE]] }),
  }),
  response: z.object({
    model: z.string(),
    data: z.array(z.object({ index: z.number().int(), embedding: z.array(z.number()) })),
  }),
  async serve(request) {
    const { values } = await encoder.call({ model_id: MODEL_ID, data_urls: request.image_urls, return_embeddings: true });
    // A pooled tower output is one row [1, dim]: the embedding is that row.
    return { model: MODEL_ID, data: values!.map((v, index) => ({ index, embedding: v.data })) };
  },
});
