/** How a value becomes a chunk's bytes and back: tensors raw, byte arrays raw, anything else as JSON. */
import { SidecarError, badRequest } from '../errors.js';
import { ELEMENT_SIZE, checkTensor, isTensor, numelOf, viewAs, type DType, type Tensor } from '../tensor.js';
import type { ChunkKind, RecvReply } from '../wire/protocol.js';

export interface Encoded {
  kind: ChunkKind;
  bytes: Uint8Array;
  dtype?: DType;
  shape?: number[];
}

export function encode(data: unknown): Encoded {
  if (isTensor(data)) {
    checkTensor(data);
    const d = data.data;
    return { kind: 'tensor', bytes: new Uint8Array(d.buffer, d.byteOffset, d.byteLength), dtype: data.dtype, shape: [...data.shape] };
  }
  if (data instanceof Uint8Array) return { kind: 'bytes', bytes: data };
  if (ArrayBuffer.isView(data)) throw badRequest('typed arrays must be sent as tensors: {dtype, shape, data}');
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch (err) {
    throw badRequest(`data is neither a tensor, bytes nor JSON-serialisable: ${(err as Error).message}`);
  }
  if (json === undefined) throw badRequest(`data of type ${typeof data} cannot be sent`);
  return { kind: 'json', bytes: Buffer.from(json) };
}

/**
 * The value of a received chunk. Tensors are views into the sidecar's shared memory (no copy), valid
 * until markDone; JSON values and byte arrays are copies. A small object on the fast path (`r.inline`) comes
 * inside the reply, in `payload`: used as it is (a tensor is copied only when its bytes are not aligned for its dtype).
 */
export function decode(r: RecvReply, segment: ArrayBuffer, payload?: Buffer): unknown {
  const size = r.size!;
  if (r.inline) {
    if ((payload?.byteLength ?? 0) !== size) throw new SidecarError('SIDECAR_INTERNAL', `an inline reply of ${size} bytes came with ${payload?.byteLength ?? 0}`);
    const p = payload ?? Buffer.alloc(0);
    switch (r.kind) {
      case 'json': return JSON.parse(p.toString('utf8'));
      case 'bytes': return new Uint8Array(p.buffer, p.byteOffset, size);
      case 'tensor': {
        const aligned = p.byteOffset % ELEMENT_SIZE[r.dtype!] === 0 ? p : Buffer.from(p);
        return { dtype: r.dtype!, shape: r.shape!, data: viewAs(r.dtype!, aligned.buffer, aligned.byteOffset, numelOf(r.shape!)) } satisfies Tensor;
      }
      default: throw new SidecarError('SIDECAR_INTERNAL', `unknown chunk kind ${String(r.kind)}`);
    }
  }
  const offset = r.offset!;
  switch (r.kind) {
    case 'json': return JSON.parse(Buffer.from(segment, offset, size).toString('utf8'));
    case 'bytes': return new Uint8Array(segment.slice(offset, offset + size));
    case 'tensor': {
      const shape = r.shape!;
      return { dtype: r.dtype!, shape, data: viewAs(r.dtype!, segment, offset, numelOf(shape)) } satisfies Tensor;
    }
    default: throw new SidecarError('SIDECAR_INTERNAL', `unknown chunk kind ${String(r.kind)}`);
  }
}
