/**
 * DataForward: a placeholder for data that moves executor-to-executor through the sidecars.
 * It appears in one invocation's output (the producer) and in later invocations' inputs (consumers).
 * The dispatcher fills in the source ranks and one destination rank group per consumer; the bytes
 * never pass through the dispatcher or the app.
 */
import { z } from 'zod';
import { randomHex } from './ids.js';

export const FORWARDABLE_TYPES = ['tensor', 'bytes', 'str', 'int', 'float', 'bool', 'dict'] as const;
export type ForwardableType = (typeof FORWARDABLE_TYPES)[number];

const rank = z.number().int().nonnegative();

export const dataForwardJsonSchema = z.object({
  id: z.string().regex(/^[0-9a-f]{1,64}$/, 'must be a lowercase hex id'),
  data_type: z.enum(FORWARDABLE_TYPES),
  src_sidecar_ranks: z.array(rank).nullable(),
  dst_sidecar_ranks: z.array(z.array(rank)).nullable(),
});
export type DataForwardJSON = z.infer<typeof dataForwardJsonSchema>;

export class DataForward<T extends ForwardableType = ForwardableType> {
  srcSidecarRanks: number[] | null = null;
  dstSidecarRanks: number[][] | null = null;

  constructor(
    readonly dataType: T,
    readonly id: string = randomHex(),
  ) {}

  static tensor(): DataForward<'tensor'> {
    return new DataForward('tensor');
  }

  toJSON(): DataForwardJSON {
    return { id: this.id, data_type: this.dataType, src_sidecar_ranks: this.srcSidecarRanks, dst_sidecar_ranks: this.dstSidecarRanks };
  }

  static fromJSON(json: DataForwardJSON): DataForward {
    const df = new DataForward(json.data_type, json.id);
    df.srcSidecarRanks = json.src_sidecar_ranks;
    df.dstSidecarRanks = json.dst_sidecar_ranks;
    return df;
  }
}

/** Accepts a DataForward or its JSON; yields a DataForward. Use it in task input/output schemas. */
export function dataForwardSchema<T extends ForwardableType>(dataType: T): z.ZodType<DataForward<T>> {
  return z.union([
    z.instanceof(DataForward).refine((d) => d.dataType === dataType, `must be a DataForward of ${dataType}`),
    dataForwardJsonSchema
      .refine((j) => j.data_type === dataType, `must be a DataForward of ${dataType}`)
      .transform((j) => DataForward.fromJSON(j)),
  ]) as unknown as z.ZodType<DataForward<T>>;
}

export const tensorForward = () => dataForwardSchema('tensor');

/** True when `v` is the JSON form of a DataForward (the dispatcher finds forwards in raw JSON this way). */
export function isDataForwardJSON(v: unknown): v is DataForwardJSON {
  // Wiring asks this of every object in every input and output: most are not forwards, and a failed zod parse
  // (it builds its issues) costs microseconds, so the shape is checked first.
  if (typeof v !== 'object' || v === null || typeof (v as { id?: unknown }).id !== 'string' || Object.keys(v).length !== 4) return false;
  return dataForwardJsonSchema.safeParse(v).success;
}
