/**
 * Tensors as the sidecar carries them: a dtype, a shape and a typed-array view of raw little-endian bytes.
 * f16 and bf16 travel as raw 2-byte values (a Uint16Array plus the dtype); `convertTensor` turns any dtype
 * into any other on the receiving side (the receiving group may ask for a different dtype than was sent).
 */
import type { DType } from '../lib/store.js';
import { badRequest } from './errors.js';

export type { DType };

export const DTYPES: readonly DType[] = ['f32', 'f16', 'bf16', 'f64', 'i64', 'i32', 'u8', 'bool'];

export type TensorData = Float32Array | Float64Array | BigInt64Array | Int32Array | Uint8Array | Uint16Array;

export interface Tensor {
  dtype: DType;
  shape: number[];
  data: TensorData;
}

export const ELEMENT_SIZE: Record<DType, number> = { f32: 4, f16: 2, bf16: 2, f64: 8, i64: 8, i32: 4, u8: 1, bool: 1 };

const CTOR = {
  f32: Float32Array, f16: Uint16Array, bf16: Uint16Array, f64: Float64Array,
  i64: BigInt64Array, i32: Int32Array, u8: Uint8Array, bool: Uint8Array,
} as const;

export const isDType = (x: unknown): x is DType => typeof x === 'string' && (DTYPES as readonly string[]).includes(x);

export const numelOf = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** A typed-array view of `numel` elements of `dtype` over `buffer` at `byteOffset` (no copy). */
export function viewAs(dtype: DType, buffer: ArrayBufferLike, byteOffset: number, numel: number): TensorData {
  return new CTOR[dtype](buffer as ArrayBuffer, byteOffset, numel);
}

export function isTensor(x: unknown): x is Tensor {
  if (typeof x !== 'object' || x === null) return false;
  const t = x as Partial<Tensor>;
  return isDType(t.dtype) && Array.isArray(t.shape) && ArrayBuffer.isView(t.data);
}

/** Builds a tensor and checks that the data matches the dtype and the shape. */
export function tensor(dtype: DType, shape: number[], data: TensorData): Tensor {
  const t = { dtype, shape, data };
  checkTensor(t);
  return t;
}

/** Throws SIDECAR_BAD_REQUEST unless `shape` is a list of non-negative integers. */
export function checkShape(shape: unknown): asserts shape is number[] {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) throw badRequest(`tensor shape must be non-negative integers, got [${String(shape)}]`);
}

export function checkTensor(t: Tensor): void {
  checkShape(t.shape);
  if (!(t.data instanceof CTOR[t.dtype])) {
    throw badRequest(`tensor data for dtype ${t.dtype} must be a ${CTOR[t.dtype].name}, got ${t.data.constructor.name}`);
  }
  const numel = numelOf(t.shape);
  if (t.data.length !== numel) throw badRequest(`tensor shape [${t.shape}] has ${numel} elements but data has ${t.data.length}`);
}

// ---------- half-precision codecs ----------

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function bf16ToFloat(h: number): number {
  u32[0] = h << 16;
  return f32[0]!;
}

export function floatToBf16(x: number): number {
  f32[0] = x;
  const bits = u32[0]!;
  if (Number.isNaN(x)) return 0x7fc0;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff; // round to nearest even
}

export function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

export function floatToHalf(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  const s = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= 65520) return s | 0x7c00; // overflows to infinity after rounding
  if (a < 2 ** -24 / 2) return s;
  if (a < 2 ** -14) return s | Math.round(a / 2 ** -24); // subnormal
  let e = Math.floor(Math.log2(a));
  let m = Math.round((a / 2 ** e - 1) * 1024);
  if (m === 1024) { m = 0; e += 1; }
  return s | ((e + 15) << 10) | m;
}

// ---------- conversion ----------

function reader(t: Tensor): (i: number) => number {
  const d = t.data;
  switch (t.dtype) {
    case 'i64': return (i) => Number((d as BigInt64Array)[i]!);
    case 'f16': return (i) => halfToFloat((d as Uint16Array)[i]!);
    case 'bf16': return (i) => bf16ToFloat((d as Uint16Array)[i]!);
    case 'bool': return (i) => ((d as Uint8Array)[i]! ? 1 : 0);
    default: return (i) => (d as Float64Array)[i]!;
  }
}

function writer(dtype: DType, out: TensorData): (i: number, v: number) => void {
  switch (dtype) {
    case 'i64': return (i, v) => { (out as BigInt64Array)[i] = Number.isFinite(v) ? BigInt(Math.trunc(v)) : 0n; };
    case 'f16': return (i, v) => { (out as Uint16Array)[i] = floatToHalf(v); };
    case 'bf16': return (i, v) => { (out as Uint16Array)[i] = floatToBf16(v); };
    case 'bool': return (i, v) => { (out as Uint8Array)[i] = v !== 0 ? 1 : 0; };
    case 'i32': case 'u8': return (i, v) => { (out as Int32Array)[i] = Math.trunc(v); };
    default: return (i, v) => { (out as Float64Array)[i] = v; };
  }
}

/** A new tensor holding `t`'s values in `to` (a copy); `t` itself when the dtype already matches. */
export function convertTensor(t: Tensor, to: DType): Tensor {
  if (t.dtype === to) return t;
  const n = t.data.length;
  const out = new CTOR[to](n);
  const read = reader(t);
  const write = writer(to, out);
  for (let i = 0; i < n; i++) write(i, read(i));
  return { dtype: to, shape: [...t.shape], data: out };
}
