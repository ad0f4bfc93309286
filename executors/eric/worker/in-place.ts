/**
 * Forwarded embeddings produced in place: the projector of an item that will be forwarded writes its output
 * straight into sidecar shared memory (SidecarClient.allocate → onnxruntime's pre-allocated output), so the send
 * moves it with no copy — one full copy fewer per forwarded item, like a GPU executor's device-to-host copy
 * landing in shared memory. One instance per job: it holds each item's allocation from the run until the item's
 * send takes it, and gives back whatever a failed run leaves unsent (no sidecar memory held by an item that
 * will never be sent).
 */
import type { SidecarClient } from '../../../sidecar/client/client.js';
import type { Tensor } from '../../../sidecar/tensor.js';
import type { OutputPlacement } from '../../models/run.js';

/** Bytes of large sends by how they reached shared memory (SidecarClient.sent's shape), as a result's meta carries them. */
export interface ForwardedBytes { inPlaceBytes: number; copiedBytes: number }

export class InPlaceOutputs {
  /** By the item's index in the job (ids of two requests batched together may be equal). */
  private readonly held = new Map<number, Tensor>();

  constructor(private readonly sidecar: Pick<SidecarClient, 'allocate' | 'release'>) {}

  /**
   * Where item `item`'s projector output goes: memory allocated from the sidecar. A failed allocation declines
   * (the item is copied at send time instead): encoding should not fail for a forwarding problem, and the send
   * that follows reports that problem on this item alone.
   */
  placement(item: number, deadline: number): OutputPlacement {
    return async (shape) => {
      const t = await this.sidecar.allocate('f32', shape, { deadline }).catch(() => undefined);
      if (!t) return undefined;
      this.held.set(item, t);
      return t.data as Float32Array;
    };
  }

  /** Item `item`'s allocation, now the caller's to send (or release); undefined when its output was not placed. */
  take(item: number): Tensor | undefined {
    const t = this.held.get(item);
    this.held.delete(item);
    return t;
  }

  /** Gives back every allocation not taken (the run failed). */
  releaseAll(): void {
    for (const t of this.held.values()) this.sidecar.release(t);
    this.held.clear();
  }
}

/** What `sent` gained since the last call: each forwarded item's result carries its share, so the router's counters add up to the client's. */
export function sentSince(sidecar: Pick<SidecarClient, 'sent'>): () => ForwardedBytes {
  let last: ForwardedBytes = { ...sidecar.sent };
  return () => {
    const now = { ...sidecar.sent };
    const d = { inPlaceBytes: now.inPlaceBytes - last.inPlaceBytes, copiedBytes: now.copiedBytes - last.copiedBytes };
    last = now;
    return d;
  };
}
