/** Tensors 1→1, 2→1, 2→2, several shapes, dtypes and chunk counts; streams; dtype conversion (the reference's test_tensors, test_mixed_streaming, test_dtype_mismatch). */
import test from 'ava';
import { startSidecars, type SidecarCluster } from '../../helpers/sidecar.js';
import { convertTensor, type DType, type Tensor } from '../../../sidecar/tensor.js';
import { assertSameTensor, makeTensor, newId, receiveInGroups, sendFromGroup } from './transfer.js';

let sc: SidecarCluster;
test.before(async () => { sc = await startSidecars({ nodes: [[0, 1, 2, 3], [4, 5, 6, 7]] }); });
test.after.always(async () => { await sc?.stop(); });

const CASES: Array<{ src: number[]; dst: number[][]; shape: number[]; dtype: DType; chunks: number }> = [
  { src: [0], dst: [[1]], shape: [100], dtype: 'bf16', chunks: 1 },
  { src: [0, 1], dst: [[2]], shape: [1176], dtype: 'f64', chunks: 2 },
  { src: [0, 1], dst: [[2, 3]], shape: [29, 4096], dtype: 'bf16', chunks: 3 },
  { src: [2, 3], dst: [[0, 1]], shape: [13, 4096], dtype: 'f32', chunks: 4 },
  { src: [0], dst: [[1]], shape: [13, 4096], dtype: 'f16', chunks: 2 },
  { src: [1], dst: [[0]], shape: [100], dtype: 'i64', chunks: 1 },
  { src: [0], dst: [[3]], shape: [1176], dtype: 'i32', chunks: 2 },
  { src: [3], dst: [[2]], shape: [29, 4096], dtype: 'u8', chunks: 1 },
  { src: [0], dst: [[1]], shape: [100], dtype: 'bool', chunks: 3 },
];

const across = (ranks: number[]) => ranks.map((r) => (r < 4 ? r + 4 : r));

for (const c of CASES) {
  for (const remote of [false, true]) {
    const dst = remote ? c.dst.map(across) : c.dst;
    const name = `${c.dtype} [${c.shape}] ×${c.chunks} chunks ${c.src.length}→${dst[0]!.length} ${remote ? 'across nodes' : 'in one node'}`;
    test(`tensor ${name} arrives intact and recv past the end is null`, async (t) => {
      const id = newId();
      const chunks = Array.from({ length: c.chunks }, (_, i) => makeTensor(c.dtype, c.shape, i + 1));
      await sendFromGroup(sc, c.src, id, dst, chunks);
      await receiveInGroups(t, sc, id, dst, c.chunks, (got, chunk, rank) => assertSameTensor(t, got, chunks[chunk]!, `rank ${rank} chunk ${chunk}`));
    });
  }
}

for (const remote of [false, true]) {
  test(`a mixed stream works when its object chunk 0 comes after tensor chunks 1..n and closeStream comes first (${remote ? 'across nodes' : 'in one node'})`, async (t) => {
    const id = newId();
    const n = 4;
    const dst = [remote ? [4, 5] : [2, 3]];
    const producer = await sc.client(0, { group: [0, 1] });
    await producer.closeStream(id, n, dst);
    const tensors = Array.from({ length: n }, (_, i) => makeTensor('bf16', [13, 4096], i + 10));
    for (let i = 1; i < n; i++) await producer.send(tensors[i], id, dst, { chunk: i, stream: true });
    const head = { prompt: 'describe', sizes: [13, 4096] };
    await producer.send(head, id, dst, { chunk: 0, stream: true });
    await receiveInGroups(t, sc, id, dst, n, (got, chunk) => {
      if (chunk === 0) t.deepEqual(got, head);
      else assertSameTensor(t, got, tensors[chunk]!, `chunk ${chunk}`);
    });
  });
}

const MISMATCH: Array<[DType, DType]> = [['i64', 'bf16'], ['bf16', 'i64'], ['f32', 'f64'], ['f64', 'f32']];
for (const [from, to] of MISMATCH) {
  for (const remote of [false, true]) {
    test(`a group receiving ${to} gets ${from} tensors converted (${remote ? 'across nodes' : 'in one node'})`, async (t) => {
      const id = newId();
      const dst = [remote ? [6, 7] : [2, 3]];
      const sent: Tensor = makeTensor(from, [29, 16], 3);
      await sendFromGroup(sc, [0, 1], id, dst, [sent]);
      await receiveInGroups(t, sc, id, dst, 1, (got) => assertSameTensor(t, got, convertTensor(sent, to), 'converted'), to);
    });
  }
}

test('a tensor received zero-copy is a view into the sidecar\'s shared memory', async (t) => {
  const id = newId();
  const sent = makeTensor('f32', [20_000], 5); // 80 000 bytes: above INLINE_MAX_BYTES (smaller objects come back inside the reply)
  await sendFromGroup(sc, [0], id, [[1]], [sent]);
  const c = await sc.client(1);
  const a = (await c.recv(id)) as Tensor;
  const b = (await c.recv(id)) as Tensor;
  t.is(a.data.buffer, b.data.buffer);
  t.is(a.data.byteOffset, b.data.byteOffset);
  await c.markDone(id);
});
