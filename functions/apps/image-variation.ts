/**
 * The image-variation app: an image in, a generated variation of it out.
 *
 *   {"image_url": "data:image/png;base64,...", "width": 128, "height": 96}  →  {"image": "<base64 PNG>"}
 *
 * A small composite task wires two unit tasks: the vision encoder (Eric, cornserve/tiny-vlm-a) turns the
 * image into embeddings [tokens, 256], which travel executor-to-executor through the sidecars (a
 * DataForward: they never pass through this app or the dispatcher) into the image generator (Geri,
 * cornserve/tiny-image-gen, input hidden size 256), which answers a PNG of the requested size.
 */
import { z } from 'zod';
import { CompositeTask, defineApp } from '../sdk/index.js';
import { EncoderTask } from '../tasks/encoder.js';
import { ImageGeneratorTask, type ImageGeneratorOutput } from '../tasks/generator.js';

const ENCODER_MODEL_ID = 'cornserve/tiny-vlm-a';
const GENERATOR_MODEL_ID = 'cornserve/tiny-image-gen';
/** An 8x8 PNG (test/helpers/media.ts makeImage(8, 8, {seed: 1})): the sample request's image. */
const EXAMPLE_IMAGE =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAmElEQVQImQXBMRHEMAwEwCtNwAQ86k1AAGQCJuD6ZkIgBL5T9UwERt0TCIEU+l0AP8FjeInm6IGRmAUF5BF5TRqlu4yQmaIlC7BXrJl12nCbYZq2yjbAJuzGQU6nBldyFw/gXXyYT7q6r/CdfsovIIbEtFDG8tgRJ+OquIGckmq5mNvzRF6Zd+UHKJVaVpt1vK6oO+tT9f0D2HVUkZ8arFEAAAAASUVORK5CYII=';

const variationInputSchema = z.object({
  image_url: z.string().min(1),
  width: z.number().int().positive().max(1024).default(256),
  height: z.number().int().positive().max(1024).default(256),
});
type VariationInput = z.infer<typeof variationInputSchema>;

/** Encoder → generator: the encoder's embeddings of the one image are the generator's input. */
class ImageVariationTask extends CompositeTask<VariationInput, ImageGeneratorOutput> {
  override readonly inputSchema = variationInputSchema;
  readonly encoder = new EncoderTask({ modality: 'image', modelIds: [ENCODER_MODEL_ID] });
  readonly generator = new ImageGeneratorTask({ modelId: GENERATOR_MODEL_ID });

  get name(): string {
    return 'image-variation';
  }

  invoke(input: VariationInput): ImageGeneratorOutput {
    const { embeddings } = this.encoder.invoke({ model_id: ENCODER_MODEL_ID, data_urls: [input.image_url] });
    return this.generator.invoke({ embeddings: embeddings[0]!, height: input.height, width: input.width });
  }
}

const variation = new ImageVariationTask();

export default defineApp({
  name: 'image-variation',
  tasks: { variation },
  // The examples make the request `cornserve up` prints for this app work as printed (an 8x8 PNG).
  request: z.object({
    image_url: z.string().min(1).meta({ examples: [EXAMPLE_IMAGE] }),
    width: z.number().int().positive().max(1024).optional().meta({ examples: [128] }),
    height: z.number().int().positive().max(1024).optional().meta({ examples: [96] }),
  }),
  response: z.object({ image: z.string().describe('base64 PNG') }),
  async serve(request) {
    const { generated } = await variation.call(request);
    return { image: generated };
  },
});
