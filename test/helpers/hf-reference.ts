/**
 * The reference for Hugging Face decoder folders: a plain onnxruntime-node greedy loop over the folder's ONNX
 * decoder with FULL recomputation at every step (the whole sequence as input_ids, empty past_key_values, no
 * cache, no padding, no batching) — none of the executor's code (steps, KV cache, engine) is involved.
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

export async function referenceDecoder(dir: string, file = 'onnx/model.onnx'): Promise<ReferenceDecoder> {
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, number>;
  const layers = config.num_hidden_layers!;
  const kvHeads = config.num_key_value_heads ?? config.num_attention_heads!;
  const headDim = config.head_dim ?? config.hidden_size! / config.num_attention_heads!;
  const session = await ort.InferenceSession.create(join(dir, file), { intraOpNumThreads: 1 });
  const lastLogits = async (ids: readonly number[]) => {
    const n = ids.length;
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, (i) => BigInt(i)), [1, n]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
      position_ids: new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => BigInt(i)), [1, n]),
    };
    for (let l = 0; l < layers; l++) {
      for (const w of ['key', 'value']) feeds[`past_key_values.${l}.${w}`] = new ort.Tensor('float32', new Float32Array(0), [1, kvHeads, 0, headDim]);
    }
    const out = await session.run(feeds, ['logits']);
    const vocab = out.logits!.dims[2]!;
    return Float32Array.from((out.logits!.data as Float32Array).subarray((n - 1) * vocab, n * vocab));
  };
  return {
    lastLogits,
    async greedy(promptIds, maxTokens, eos) {
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
    },
    close: () => session.release(),
  };
}
