/**
 * The references for Hugging Face folders: plain onnxruntime-node greedy loops over the folder's ONNX parts with
 * FULL recomputation at every step (the whole sequence as input, empty past_key_values, no cache, no padding,
 * no batching) — none of the executor's code (steps, KV cache, engine, prompt assembly) is involved.
 *  - `referenceDecoder`: a decoder taking input_ids (tiny-qwen2);
 *  - `referenceVlm`: a split VLM (tiny-qwen2-vl): vision_encoder → features; embed_tokens over the ids; the
 *    features written over the image-token rows in order; decoder_model_merged over inputs_embeds.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import ort from 'onnxruntime-node';

export interface ReferenceDecoder {
  /** Greedy continuation of `promptIds`: at most `maxTokens` ids, stopping after an id in `eos`. */
  greedy(promptIds: readonly number[], maxTokens: number, eos: ReadonlySet<number>): Promise<number[]>;
  /** Logits [vocab] of the last position of `ids`, computed from scratch. */
  lastLogits(ids: readonly number[]): Promise<Float32Array>;
  close(): Promise<void>;
}

type Config = Record<string, number>;

/** Logits [vocab] of the last of `n` positions given the decoder's first input (input_ids or inputs_embeds). */
async function lastLogitsOf(session: ort.InferenceSession, config: Config, n: number, first: Record<string, ort.Tensor>): Promise<Float32Array> {
  const kvHeads = config.num_key_value_heads ?? config.num_attention_heads!;
  const headDim = config.head_dim ?? config.hidden_size! / config.num_attention_heads!;
  const feeds: Record<string, ort.Tensor> = {
    ...first,
    attention_mask: new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
    position_ids: new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => BigInt(i)), [1, n]),
  };
  for (let l = 0; l < config.num_hidden_layers!; l++) {
    for (const w of ['key', 'value']) feeds[`past_key_values.${l}.${w}`] = new ort.Tensor('float32', new Float32Array(0), [1, kvHeads, 0, headDim]);
  }
  const out = await session.run(feeds, ['logits']);
  const vocab = out.logits!.dims[2]!;
  return Float32Array.from((out.logits!.data as Float32Array).subarray((n - 1) * vocab, n * vocab));
}

async function greedyLoop(lastLogits: (ids: readonly number[]) => Promise<Float32Array>, promptIds: readonly number[], maxTokens: number, eos: ReadonlySet<number>): Promise<number[]> {
  const ids = [...promptIds];
  const out: number[] = [];
  while (out.length < maxTokens) {
    const logits = await lastLogits(ids);
    let best = 0;
    for (let v = 1; v < logits.length; v++) if (logits[v]! > logits[best]!) best = v;
    out.push(best);
    ids.push(best);
    if (eos.has(best)) break;
  }
  return out;
}

const readConfig = async (dir: string) => JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Config;

export async function referenceDecoder(dir: string, file = 'onnx/model.onnx'): Promise<ReferenceDecoder> {
  const config = await readConfig(dir);
  const session = await ort.InferenceSession.create(join(dir, file), { intraOpNumThreads: 1 });
  const lastLogits = (ids: readonly number[]) =>
    lastLogitsOf(session, config, ids.length, { input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, (i) => BigInt(i)), [1, ids.length]) });
  return {
    lastLogits,
    greedy: (promptIds, maxTokens, eos) => greedyLoop(lastLogits, promptIds, maxTokens, eos),
    close: () => session.release(),
  };
}

/** Qwen2-VL patches of one image: [num_patches, patch_dim] and its grid in patches. */
export interface VlmImage { patches: Float32Array; patchDim: number; grid: { t: number; h: number; w: number } }

export interface ReferenceVlm {
  readonly imageTokenId: number;
  /** vision_encoder over one image → image_features [tokens, hidden]. */
  features(image: VlmImage): Promise<{ data: Float32Array; shape: number[] }>;
  /** Greedy continuation of `promptIds` (image tokens already expanded) with `features` rows at the image tokens, in order. */
  greedy(promptIds: readonly number[], features: Float32Array, maxTokens: number, eos: ReadonlySet<number>): Promise<number[]>;
  close(): Promise<void>;
}

export async function referenceVlm(dir: string): Promise<ReferenceVlm> {
  const config = await readConfig(dir);
  const open = (part: string) => ort.InferenceSession.create(join(dir, 'onnx', `${part}.onnx`), { intraOpNumThreads: 1 });
  const [vision, embed, decoder] = [await open('vision_encoder'), await open('embed_tokens'), await open('decoder_model_merged')];
  const hidden = config.hidden_size!;
  const imageTokenId = config.image_token_id!;
  return {
    imageTokenId,
    async features(image) {
      const n = image.grid.t * image.grid.h * image.grid.w;
      const out = await vision.run({
        pixel_values: new ort.Tensor('float32', image.patches, [n, image.patchDim]),
        grid_thw: new ort.Tensor('int64', BigInt64Array.from([image.grid.t, image.grid.h, image.grid.w].map(BigInt)), [1, 3]),
      });
      return { data: Float32Array.from(out.image_features!.data as Float32Array), shape: [...out.image_features!.dims] };
    },
    greedy(promptIds, features, maxTokens, eos) {
      return greedyLoop(async (ids) => {
        const out = await embed.run({ input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, (i) => BigInt(i)), [1, ids.length]) });
        const embeds = Float32Array.from(out.inputs_embeds!.data as Float32Array);
        let row = 0;
        ids.forEach((id, i) => {
          if (id === imageTokenId) embeds.set(features.subarray(row * hidden, ++row * hidden), i * hidden);
        });
        if (row * hidden !== features.length) throw new Error(`prompt has ${row} image tokens for ${features.length / hidden} feature rows`);
        return lastLogitsOf(decoder, config, ids.length, { inputs_embeds: new ort.Tensor('float32', embeds, [1, ids.length, hidden]) });
      }, promptIds, maxTokens, eos);
    },
    close: async () => void (await Promise.all([vision.release(), embed.release(), decoder.release()])),
  };
}
