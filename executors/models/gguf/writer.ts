/**
 * A GGUF file writer (the format llama.cpp loads, version 3): header, typed metadata, tensor table, then each
 * tensor's data at an offset aligned to `general.alignment` (32). All integers little-endian. Tensors are F32;
 * their dims are given in ggml order (ne0 first = the contiguous axis), so a PyTorch `[out, in]` weight is
 * `dims: [in, out]` with the same row-major bytes.
 */

const MAGIC = 0x46554747; // 'GGUF'
const VERSION = 3;
export const GGUF_ALIGNMENT = 32;

/** GGUF metadata value types. */
const T = { uint32: 4, int32: 5, float32: 6, bool: 7, string: 8, array: 9, uint64: 10 } as const;
/** ggml tensor types used here. */
const GGML_F32 = 0;

export type GgufValue =
  | { type: 'uint32' | 'int32' | 'float32'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'uint64'; value: bigint }
  | { type: 'array'; of: 'string'; value: readonly string[] }
  | { type: 'array'; of: 'int32' | 'float32'; value: readonly number[] };

export const gguf = {
  u32: (value: number): GgufValue => ({ type: 'uint32', value }),
  i32: (value: number): GgufValue => ({ type: 'int32', value }),
  f32: (value: number): GgufValue => ({ type: 'float32', value }),
  bool: (value: boolean): GgufValue => ({ type: 'bool', value }),
  str: (value: string): GgufValue => ({ type: 'string', value }),
  strs: (value: readonly string[]): GgufValue => ({ type: 'array', of: 'string', value }),
  i32s: (value: readonly number[]): GgufValue => ({ type: 'array', of: 'int32', value }),
};

export interface GgufTensor {
  name: string;
  /** ggml order: ne0 (contiguous) first. */
  dims: readonly number[];
  data: Float32Array;
}

/** Appends little-endian values to a growing list of chunks. */
class Out {
  readonly chunks: Uint8Array[] = [];
  length = 0;

  private push(b: Uint8Array): void {
    this.chunks.push(b);
    this.length += b.byteLength;
  }

  private scalar(bytes: number, set: (v: DataView) => void): void {
    const b = new Uint8Array(bytes);
    set(new DataView(b.buffer));
    this.push(b);
  }

  u32(v: number): void { this.scalar(4, (d) => d.setUint32(0, v, true)); }
  i32(v: number): void { this.scalar(4, (d) => d.setInt32(0, v, true)); }
  f32(v: number): void { this.scalar(4, (d) => d.setFloat32(0, v, true)); }
  u64(v: bigint | number): void { this.scalar(8, (d) => d.setBigUint64(0, BigInt(v), true)); }
  u8(v: number): void { this.push(Uint8Array.of(v)); }
  bytes(b: Uint8Array): void { this.push(b); }

  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.byteLength);
    this.push(b);
  }

  pad(alignment: number): void {
    const n = (alignment - (this.length % alignment)) % alignment;
    if (n) this.push(new Uint8Array(n));
  }
}

function writeValue(o: Out, v: GgufValue): void {
  switch (v.type) {
    case 'uint32': return o.u32(v.value);
    case 'int32': return o.i32(v.value);
    case 'float32': return o.f32(v.value);
    case 'bool': return o.u8(v.value ? 1 : 0);
    case 'string': return o.str(v.value);
    case 'uint64': return o.u64(v.value);
    case 'array': {
      o.u32(T[v.of]);
      o.u64(v.value.length);
      for (const x of v.value) {
        if (v.of === 'string') o.str(x as string);
        else if (v.of === 'int32') o.i32(x as number);
        else o.f32(x as number);
      }
    }
  }
}

const align = (n: number, a: number) => Math.ceil(n / a) * a;

/** The bytes of a GGUF v3 file holding `metadata` (in insertion order) and `tensors` (F32, in order). */
export function writeGguf(metadata: ReadonlyMap<string, GgufValue> | Record<string, GgufValue>, tensors: readonly GgufTensor[]): Uint8Array {
  const entries: [string, GgufValue][] = metadata instanceof Map ? [...metadata.entries()] : Object.entries(metadata);
  const o = new Out();
  o.u32(MAGIC);
  o.u32(VERSION);
  o.u64(tensors.length);
  o.u64(entries.length);
  for (const [key, value] of entries) {
    o.str(key);
    o.u32(T[value.type]);
    writeValue(o, value);
  }
  let offset = 0;
  for (const t of tensors) {
    const n = t.dims.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) throw new Error(`tensor ${t.name}: dims ${t.dims.join('×')} hold ${n} values, data has ${t.data.length}`);
    o.str(t.name);
    o.u32(t.dims.length);
    for (const d of t.dims) o.u64(d);
    o.u32(GGML_F32);
    o.u64(offset);
    offset = align(offset + t.data.byteLength, GGUF_ALIGNMENT);
  }
  o.pad(GGUF_ALIGNMENT);
  for (const t of tensors) {
    o.bytes(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    o.pad(GGUF_ALIGNMENT);
  }
  return Buffer.concat(o.chunks);
}
