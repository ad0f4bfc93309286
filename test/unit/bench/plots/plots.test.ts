import test from 'ava';
import { Resvg } from '@resvg/resvg-js';
import sharp from 'sharp';
import { PNG_SCALE, renderSvg, svgToPng } from '../../../../bench/plots/render.js';
import { latencyCdfSpec, soakSpec, throughputSpec, timelineSpec } from '../../../../bench/plots/specs.js';

/** Parses the SVG (resvg rejects malformed XML) and returns its size and every <text> content. */
function parseSvg(svg: string): { width: number; height: number; texts: string[] } {
  const r = new Resvg(svg);
  const texts = [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!.replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>'));
  return { width: r.width, height: r.height, texts };
}

/** Dark pixels in the top `band` rows of a PNG (the title's text). */
async function darkPixelsInTitleBand(png: Buffer, band: number): Promise<number> {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  let dark = 0;
  for (let y = 0; y < band; y++) {
    for (let x = 0; x < info.width; x++) {
      const i = (y * info.width + x) * info.channels;
      if (data[i]! < 80 && data[i + 1]! < 80 && data[i + 2]! < 80) dark++;
    }
  }
  return dark;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

async function checkPlot(t: import('ava').ExecutionContext, spec: Parameters<typeof renderSvg>[0], title: string, series: string[]) {
  const svg = await renderSvg(spec);
  t.true(svg.startsWith('<svg'), 'an SVG document');
  const parsed = parseSvg(svg);
  t.true(parsed.texts.includes(title), `title '${title}' in ${parsed.texts.slice(0, 5).join(' | ')}`);
  for (const s of series) t.true(parsed.texts.includes(s), `series '${s}' in the legend`);
  const png = svgToPng(svg);
  t.deepEqual(png.subarray(0, 8), PNG_SIGNATURE);
  t.is(png.readUInt32BE(16), Math.round(parsed.width * PNG_SCALE)); // IHDR width
  t.is(png.readUInt32BE(20), Math.round(parsed.height * PNG_SCALE)); // IHDR height
  t.true((await darkPixelsInTitleBand(png, 24 * PNG_SCALE)) > 50, 'the title is drawn (fonts found)');
}

test('the latency CDF plot is a valid SVG and PNG with one series per metric', async (t) => {
  const values = (k: number) => Array.from({ length: 500 }, (_, i) => k * (1 + i / 10));
  await checkPlot(t, latencyCdfSpec([{ name: 'TTFT', values: values(1) }, { name: 'TPOT', values: values(0.2) }, { name: 'E2EL', values: values(5) }], 'Latency CDFs here'), 'Latency CDFs here', ['TTFT', 'TPOT', 'E2EL']);
});

test('the throughput plot shows request throughput and goodput against rate', async (t) => {
  await checkPlot(t, throughputSpec([{ rate: 1, requestThroughput: 1, goodput: 1 }, { rate: 2, requestThroughput: 1.9, goodput: 1.5 }], 'Throughput'), 'Throughput', ['request throughput', 'goodput (requests meeting the SLOs)']);
});

test('the timeline plot shows in-flight requests and executors per task', async (t) => {
  await checkPlot(
    t,
    timelineSpec([{ tS: 0, inFlight: 0 }, { tS: 1, inFlight: 3 }, { tS: 2, inFlight: 1 }], [{ tS: 0, executors: { 'llm-tiny-vlm-a': 1 } }, { tS: 1.5, executors: { 'llm-tiny-vlm-a': 2 } }], 'Timeline'),
    'Timeline',
    ['in-flight requests', 'executors: llm-tiny-vlm-a'],
  );
});

test('the soak plot shows p99 per minute and memory per process', async (t) => {
  await checkPlot(t, soakSpec([{ minute: 0, p99E2elMs: 90, rssBytes: { 'cornserve up [7]': 2e8 } }, { minute: 1, p99E2elMs: 95, rssBytes: { 'cornserve up [7]': 2.1e8 } }], 'Soak'), 'Soak', ['p99 E2EL', 'cornserve up [7]']);
});
