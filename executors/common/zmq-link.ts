/**
 * One end of the router ↔ engine link: a ZeroMQ PUSH socket out and a PULL socket in, over ipc:// in a
 * private temp dir (the router binds, the engine connects). Sends are serialised (zeromq.js wants one
 * send in flight per socket); received packets are validated against the link's schema and dispatched.
 */
import { join } from 'node:path';
import type { z } from 'zod';
import { Pull, Push } from 'zeromq';
import type { Logger } from '../../lib/log.js';
import { type Packet, fromFrames, toFrames } from '../../lib/executor-protocol.js';

/** The two endpoints inside an ipc dir: what the router sends on, what the engine sends on. */
export const endpoints = (ipcDir: string) => ({
  toEngine: `ipc://${join(ipcDir, 'to-engine')}`,
  toRouter: `ipc://${join(ipcDir, 'to-router')}`,
});

export class ZmqLink<In, Out> {
  private readonly push = new Push({ linger: 0, sendHighWaterMark: 0 });
  private readonly pull = new Pull({ linger: 0, receiveHighWaterMark: 0 });
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly schema: z.ZodType<In>,
    private readonly name: string,
    private readonly log: Logger,
  ) {}

  /** Router side: binds both sockets. */
  async bind(out: string, inbound: string): Promise<void> {
    await Promise.all([this.push.bind(out), this.pull.bind(inbound)]);
  }

  /** Engine side: connects both sockets. */
  connect(out: string, inbound: string): void {
    this.push.connect(out);
    this.pull.connect(inbound);
  }

  /** Sends one packet (after the ones already queued). */
  send(header: Out, blobs: Uint8Array[] = []): Promise<void> {
    const frames = toFrames({ header, blobs } as Packet<unknown>);
    const p = this.chain.then(() => this.push.send(frames));
    this.chain = p.catch(() => undefined);
    return p;
  }

  /** Receives until closed; a packet that fails validation is logged and dropped. */
  async receive(onPacket: (p: Packet<In>) => void): Promise<void> {
    try {
      for await (const frames of this.pull) {
        let packet: Packet<In>;
        try {
          packet = fromFrames(frames, this.schema, this.name);
        } catch (e) {
          this.log.error({ err: (e as Error).message }, 'dropping a malformed message');
          continue;
        }
        onPacket(packet);
      }
    } catch (e) {
      if (!this.closed) this.log.error({ err: (e as Error).message }, `${this.name}: receive failed`);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.push.close();
    this.pull.close();
  }
}
