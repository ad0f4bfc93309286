/** Shared steps of the sidecar integration tests: deterministic tensors, a send from a group, receives by groups. */
import type { ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import type { SidecarCluster } from '../../helpers/sidecar.js';
import { floatToBf16, floatToHalf, tensor, type DType, type Tensor } from '../../../sidecar/tensor.js';

export const newId = () => randomBytes(8).toString('hex');

export function makeTensor(dtype: DType, shape: number[], seed = 1): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const f = (i: number) => Math.sin(i * 0.37 + seed) * 8;
  switch (dtype) {
    case 'f32': return tensor(dtype, shape, Float32Array.from({ length: n }, (_, i) => f(i)));
    case 'f64': return tensor(dtype, shape, Float64Array.from({ length: n }, (_, i) => f(i)));
    case 'f16': return tensor(dtype, shape, Uint16Array.from({ length: n }, (_, i) => floatToHalf(f(i))));
    case 'bf16': return tensor(dtype, shape, Uint16Array.from({ length: n }, (_, i) => floatToBf16(f(i))));
    case 'i64': return tensor(dtype, shape, BigInt64Array.from({ length: n }, (_, i) => BigInt(i * seed - 7)));
    case 'i32': return tensor(dtype, shape, Int32Array.from({ length: n }, (_, i) => i * seed - 7));
    case 'u8': return tensor(dtype, shape, Uint8Array.from({ length: n }, (_, i) => (i + seed) & 255));
    case 'bool': return tensor(dtype, shape, Uint8Array.from({ length: n }, (_, i) => ((i + seed) % 3 === 0 ? 1 : 0)));
  }
}

export const bytesOf = (t: Tensor) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);

export function assertSameTensor(t: ExecutionContext, got: unknown, want: Tensor, what: string): void {
  const g = got as Tensor;
  t.is(g?.dtype, want.dtype, `${what}: dtype`);
  t.deepEqual(g.shape, want.shape, `${what}: shape`);
  t.true(bytesOf(g).equals(bytesOf(want)), `${what}: bytes`);
}

/** Every rank of `src` sends `chunks[i]` as chunk i of `id` to `dst` (only the leader really sends). */
export async function sendFromGroup(sc: SidecarCluster, src: number[], id: string, dst: number[][], chunks: unknown[]): Promise<void> {
  await Promise.all(src.map(async (rank) => {
    const c = await sc.client(rank, { group: src });
    await Promise.all(chunks.map((data, chunk) => c.send(data, id, dst, { chunk, numChunks: chunks.length })));
  }));
}

/** Every rank of every group receives every chunk, checks it, then marks it done; also checks recv past the end is null. */
export async function receiveInGroups(t: ExecutionContext, sc: SidecarCluster, id: string, dst: number[][], n: number,
  check: (got: unknown, chunk: number, rank: number) => void, recvDtype?: DType): Promise<void> {
  await Promise.all(dst.flatMap((g) => g.map(async (rank) => {
    const c = await sc.client(rank, { group: g, ...(recvDtype ? { recvDtype } : {}) });
    for (let chunk = n - 1; chunk >= 0; chunk--) check(await c.recv(id, chunk), chunk, rank);
    t.is(await c.recv(id, n), null, `rank ${rank}: recv past the end`);
    t.is(await c.recv(id, n + 1), null, `rank ${rank}: recv well past the end`);
    for (let chunk = 0; chunk < n; chunk++) await c.markDone(id, chunk);
  })));
}
