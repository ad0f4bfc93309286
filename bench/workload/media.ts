/**
 * Deterministic synthetic media for a RequestSpec: PNG images (a seeded gradient with stripes, so the encoder
 * sees structure and the file compresses like a picture rather than noise), WAV tones, and videos as a list of
 * PNG frames (`data:video/png;base64,f0,f1,…`, the frame-list form Eric accepts without ffmpeg). In-memory
 * only: zlib deflate for the PNG, the executors' own WAV writer.
 */
import { deflateSync } from 'node:zlib';
import { encodeWav } from '../../executors/models/preprocess/wav.js';

const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  out.set(data, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** A width×height RGB PNG whose pattern depends on `seed`. */
export function syntheticPng(width: number, height: number, seed: number): Buffer {
  const rowBytes = 1 + width * 3;
  const raw = Buffer.alloc(rowBytes * height);
  const stripe = 8 + (seed % 24);
  const tint = (seed >>> 5) % 256;
  for (let y = 0; y < height; y++) {
    const row = y * rowBytes; // filter byte 0 (none)
    for (let x = 0; x < width; x++) {
      const i = row + 1 + x * 3;
      raw[i] = Math.floor((x * 255) / Math.max(1, width - 1));
      raw[i + 1] = Math.floor((y * 255) / Math.max(1, height - 1));
      raw[i + 2] = Math.floor((x + y) / stripe) % 2 === 0 ? tint : 255 - tint;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, deflate, no filter, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw, { level: 1 })),
    pngChunk('IEND', new Uint8Array(0)),
  ]);
}

export const AUDIO_SAMPLE_RATE = 16_000;

/** `seconds` of a 16 kHz PCM16 WAV: a tone whose pitch depends on `seed`, with a slow tremolo. */
export function syntheticWav(seconds: number, seed: number): Uint8Array {
  const n = Math.max(1, Math.round(seconds * AUDIO_SAMPLE_RATE));
  const freq = 200 + (seed % 800);
  const samples = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const t = i / AUDIO_SAMPLE_RATE;
    samples[i] = 0.4 * Math.sin(2 * Math.PI * freq * t) * (0.75 + 0.25 * Math.sin(2 * Math.PI * 3 * t));
  }
  return encodeWav([samples], AUDIO_SAMPLE_RATE);
}

export const dataUrl = (mime: string, bytes: Uint8Array) => `data:${mime};base64,${Buffer.from(bytes).toString('base64')}`;

export const imageUrl = (width: number, height: number, seed: number) => dataUrl('image/png', syntheticPng(width, height, seed));
export const audioUrl = (seconds: number, seed: number) => dataUrl('audio/wav', syntheticWav(seconds, seed));
/** A frame-list video URL: every frame a PNG, comma-separated base64. */
export const videoUrl = (frames: number, width: number, height: number, seed: number) =>
  `data:video/png;base64,${Array.from({ length: frames }, (_, f) => syntheticPng(width, height, seed + f).toString('base64')).join(',')}`;
