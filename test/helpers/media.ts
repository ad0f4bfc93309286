/** Small synthetic media for model tests: deterministic images (PNG/JPEG) and tones. */
import sharp from 'sharp';

/** A width x height RGB gradient with a seed-dependent pattern, encoded as PNG or JPEG. */
export async function makeImage(width: number, height: number, o: { seed?: number; format?: 'png' | 'jpeg' } = {}): Promise<Buffer> {
  const seed = o.seed ?? 0;
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      raw[i] = (x * 255) / Math.max(1, width - 1);
      raw[i + 1] = (y * 255) / Math.max(1, height - 1);
      raw[i + 2] = ((x + y + seed * 37) * 13) % 256;
    }
  }
  const img = sharp(raw, { raw: { width, height, channels: 3 } });
  return (o.format ?? 'png') === 'png' ? img.png().toBuffer() : img.jpeg({ quality: 90 }).toBuffer();
}

/** A sine tone in [-amp, amp]. */
export function tone(freq: number, seconds: number, rate: number, amp = 0.5): Float32Array {
  return Float32Array.from({ length: Math.round(seconds * rate) }, (_, i) => amp * Math.sin((2 * Math.PI * freq * i) / rate));
}
