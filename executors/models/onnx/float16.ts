/**
 * fp16 variants of built graphs, as `onnxconverter_common.float16.convert_float_to_float16(keep_io_types=True)`
 * makes them (the `_fp16` files of Optimum / onnx-community exports): every float32 initializer is stored as
 * float16 and the graph computes in float16; float32 graph inputs are cast to float16 on entry and float32
 * outputs cast back on exit, so callers feed and read float32 as with the fp32 file. On the CPU provider,
 * onnxruntime wraps ops that have no fp16 CPU kernel in casts to float32 when it loads the graph: the file is
 * half the size and runs everywhere; fp16 arithmetic speed is a GPU matter.
 */
import type { GraphBuilder } from './graph-builder.js';
import { AttributeType, DataType, ModelProto } from './schema.js';

/** onnx.TensorProto.DataType FLOAT16 (GraphBuilder itself writes float32 only). */
const FLOAT16 = 10;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE half bits of `x`, rounded to nearest even (overflow → ±Inf, NaN kept). */
export function float16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0]!;
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    let half = m >>> shift;
    const rest = m & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && half & 1)) half++;
  e = half >>> 10;
  return sign | half;
}

interface NodeObj { op_type: string; name: string; input: string[]; output: string[]; attribute: { name: string; type: number; i?: number }[] }
interface TensorObj { name: string; dims: number[]; data_type: number; raw_data: Uint8Array }
interface ValueObj { name: string; type: { tensor_type: { elem_type: number } } }
interface GraphObj { node: NodeObj[]; initializer: TensorObj[]; input: ValueObj[]; output: ValueObj[] }

function toHalf(raw: Uint8Array): Uint8Array {
  const src = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  const out = new Uint16Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = float16Bits(src[i]!);
  return new Uint8Array(out.buffer);
}

const castNode = (input: string, output: string, to: number): NodeObj =>
  ({ op_type: 'Cast', name: `cast_${output}`, input: [input], output: [output], attribute: [{ name: 'to', type: AttributeType.INT, i: to }] });

/** The fp16 variant of a model object from GraphBuilder.toModel() (float32 graph I/O kept). */
export function toFloat16Model(model: Record<string, unknown>): Record<string, unknown> {
  const g = model.graph as GraphObj;
  const rename = (nodes: NodeObj[], from: string, to: string) => nodes.forEach((n) => (n.input = n.input.map((x) => (x === from ? to : x))));
  const nodes: NodeObj[] = g.node.map((n) => ({
    ...n, input: [...n.input], output: [...n.output],
    attribute: n.attribute.map((a) => (n.op_type === 'Cast' && a.name === 'to' && a.i === DataType.FLOAT ? { ...a, i: FLOAT16 } : a)),
  }));
  const entry: NodeObj[] = [];
  for (const v of g.input.filter((v) => v.type.tensor_type.elem_type === DataType.FLOAT)) {
    rename(nodes, v.name, `${v.name}__fp16`);
    entry.push(castNode(v.name, `${v.name}__fp16`, FLOAT16));
  }
  const exit: NodeObj[] = [];
  for (const v of g.output.filter((v) => v.type.tensor_type.elem_type === DataType.FLOAT)) {
    const producer = nodes.find((n) => n.output.includes(v.name));
    if (!producer) throw new Error(`output ${v.name} has no producing node`);
    producer.output = producer.output.map((o) => (o === v.name ? `${v.name}__fp16` : o));
    rename(nodes, v.name, `${v.name}__fp16`);
    exit.push(castNode(`${v.name}__fp16`, v.name, DataType.FLOAT));
  }
  const initializer = g.initializer.map((t) => (t.data_type === DataType.FLOAT ? { ...t, data_type: FLOAT16, raw_data: toHalf(t.raw_data) } : t));
  return { ...model, graph: { ...g, node: [...entry, ...nodes, ...exit], initializer } };
}

/** The fp16 variant of `g`, serialised (see toFloat16Model). */
export function float16Bytes(g: GraphBuilder): Uint8Array {
  const msg = toFloat16Model(g.toModel());
  const err = ModelProto.verify(msg);
  if (err) throw new Error(`graph ${g.name} (fp16): invalid model: ${err}`);
  return ModelProto.encode(ModelProto.fromObject(msg)).finish();
}
