/**
 * WAV (RIFF/WAVE) decoding: PCM 8/16/24/32-bit integer and IEEE float 32/64, plain or WAVE_FORMAT_EXTENSIBLE.
 * Missing chunks, unknown encodings and truncated data → MODEL_INPUT_CORRUPT.
 */
import { modelErrors } from '../errors.js';

export interface PcmAudio {
  sampleRate: number;
  /** One Float32Array per channel, samples in [-1, 1]. */
  channels: Float32Array[];
}

const FORMAT_PCM = 1;
const FORMAT_FLOAT = 3;
const FORMAT_EXTENSIBLE = 0xfffe;

export function decodeWav(bytes: Uint8Array): PcmAudio {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (o: number) => String.fromCharCode(bytes[o]!, bytes[o + 1]!, bytes[o + 2]!, bytes[o + 3]!);
  if (bytes.byteLength < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw modelErrors.corrupt('not a RIFF/WAVE file');
  let fmt: { format: number; channels: number; rate: number; bits: number; align: number } | undefined;
  let data: Uint8Array | undefined;
  let off = 12;
  while (off + 8 <= bytes.byteLength) {
    const id = tag(off);
    let size = view.getUint32(off + 4, true);
    const body = off + 8;
    if (id === 'data' && (size === 0xffffffff || size === 0)) size = bytes.byteLength - body; // streamed WAV
    if (body + size > bytes.byteLength) throw modelErrors.corrupt(`WAV chunk '${id}' is truncated (${size} bytes declared, ${bytes.byteLength - body} present)`);
    if (id === 'fmt ') {
      if (size < 16) throw modelErrors.corrupt('WAV fmt chunk too short');
      let format = view.getUint16(body, true);
      if (format === FORMAT_EXTENSIBLE && size >= 26) format = view.getUint16(body + 24, true);
      fmt = {
        format, channels: view.getUint16(body + 2, true), rate: view.getUint32(body + 4, true),
        align: view.getUint16(body + 12, true), bits: view.getUint16(body + 14, true),
      };
    } else if (id === 'data') {
      data = bytes.subarray(body, body + size);
      break;
    }
    off = body + size + (size & 1);
  }
  if (!fmt) throw modelErrors.corrupt('WAV has no fmt chunk');
  if (!data) throw modelErrors.corrupt('WAV has no data chunk');
  const { format, channels, rate, bits } = fmt;
  if (channels < 1 || rate < 1) throw modelErrors.corrupt(`WAV has ${channels} channels at ${rate} Hz`);
  const bytesPer = bits / 8;
  const supported = (format === FORMAT_PCM && [8, 16, 24, 32].includes(bits)) || (format === FORMAT_FLOAT && [32, 64].includes(bits));
  if (!supported) throw modelErrors.corrupt(`unsupported WAV encoding: format ${format}, ${bits} bits`);
  const frameBytes = bytesPer * channels;
  if (data.byteLength % frameBytes !== 0) throw modelErrors.corrupt(`WAV data is truncated (${data.byteLength} bytes is not a whole number of ${frameBytes}-byte frames)`);
  const n = data.byteLength / frameBytes;
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const read: (o: number) => number =
    format === FORMAT_FLOAT
      ? bits === 32 ? (o) => dv.getFloat32(o, true) : (o) => dv.getFloat64(o, true)
      : bits === 8 ? (o) => (dv.getUint8(o) - 128) / 128
      : bits === 16 ? (o) => dv.getInt16(o, true) / 32768
      : bits === 24 ? (o) => ((dv.getUint8(o) | (dv.getUint8(o + 1) << 8) | (dv.getInt8(o + 2) << 16)) / 8388608)
      : (o) => dv.getInt32(o, true) / 2147483648;
  const out = Array.from({ length: channels }, () => new Float32Array(n));
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < channels; c++) out[c]![i] = read(i * frameBytes + c * bytesPer);
  }
  return { sampleRate: rate, channels: out };
}

/** Averages channels. */
export function toMono(audio: PcmAudio): Float32Array {
  if (audio.channels.length === 1) return audio.channels[0]!;
  const n = audio.channels[0]!.length;
  const out = new Float32Array(n);
  for (const ch of audio.channels) for (let i = 0; i < n; i++) out[i]! += ch[i]!;
  for (let i = 0; i < n; i++) out[i]! /= audio.channels.length;
  return out;
}

/** Encodes mono or multi-channel float samples as a WAV (16-bit PCM or 32-bit float); used by tests and tools. */
export function encodeWav(channels: readonly Float32Array[], sampleRate: number, encoding: 'pcm16' | 'float32' = 'pcm16'): Uint8Array {
  const bits = encoding === 'pcm16' ? 16 : 32;
  const n = channels[0]!.length;
  const dataBytes = n * channels.length * (bits / 8);
  const buf = new ArrayBuffer(44 + dataBytes);
  const v = new DataView(buf);
  const str = (o: number, s: string) => { for (let i = 0; i < 4; i++) v.setUint8(o + i, s.charCodeAt(i)); };
  str(0, 'RIFF'); v.setUint32(4, 36 + dataBytes, true); str(8, 'WAVE');
  str(12, 'fmt '); v.setUint32(16, 16, true); v.setUint16(20, encoding === 'pcm16' ? FORMAT_PCM : FORMAT_FLOAT, true);
  v.setUint16(22, channels.length, true); v.setUint32(24, sampleRate, true);
  v.setUint32(28, sampleRate * channels.length * (bits / 8), true); v.setUint16(32, channels.length * (bits / 8), true); v.setUint16(34, bits, true);
  str(36, 'data'); v.setUint32(40, dataBytes, true);
  let o = 44;
  for (let i = 0; i < n; i++) {
    for (const ch of channels) {
      const s = Math.max(-1, Math.min(1, ch[i]!));
      if (encoding === 'pcm16') { v.setInt16(o, Math.round(s * 32767), true); o += 2; } else { v.setFloat32(o, ch[i]!, true); o += 4; }
    }
  }
  return new Uint8Array(buf);
}
