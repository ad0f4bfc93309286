/**
 * Geri benchmark: generation throughput served through the whole Geri path — a producer puts the embeddings
 * into the sidecar (as Eric would), HTTP POST → router (sidecar receive, copy, free) → ZeroMQ → engine
 * (batches of identical parameters up to MAX_BATCH) → shared-memory ring → worker thread (onnxruntime,
 * intraOpNumThreads 1) → PNG / PCM16 back — next to a direct loop over the same model, embeddings and
 * parameters (models/generate.ts in this process, same session options), measured in the same run.
 *
 * The served side has CLIENTS concurrent requests in flight, the direct side one loop: both have one
 * onnxruntime thread generating. Rounds alternate served / direct (order flipped every pair); each pair
 * gives one ratio (served / direct, higher is better); the table shows medians.
 * Run alone: node --import tsx test/bench/geri.ts
 */
import { generateAudio, generateImage } from '../../executors/models/generate.js';
import { type LoadedModel, loadModel } from '../../executors/models/loader.js';
import { GERI_SESSION_OPTIONS } from '../../executors/geri/worker/jobs.js';
import { type GeriNode, dataId, embeddings, sendEmbeddings, startGeriNode } from '../helpers/geri.js';
import { modelDir } from '../helpers/models.js';
import { processCpuMs } from '../../bench/client/proc.js';
import { median, formatTable, ownCpuMs, type BenchResult } from './types.js';

const CLIENTS = 8;
const MAX_BATCH = 4;
const ROUND_MS = 3_000;
const PAIRS = 4;
/** A small image (per-request costs dominate) and a larger one (generation dominates, as with real models). */
const IMAGES = [{ height: 64, width: 64, steps: 4, tokens: 64 }, { height: 256, width: 256, steps: 8, tokens: 64 }];
const AUDIO = { frames: 200, chunk: 50 };

/**
 * CPU per completion of `step`: of the given processes (served: Geri's router and engine, the sidecar), or of
 * this process (direct). Load-independent, unlike the rates.
 */
async function cpuPer(loops: number, pids: number[] | undefined, step: () => Promise<void>): Promise<number> {
  const cpu = () => (pids ? pids.reduce((n, p) => n + processCpuMs(p), 0) : ownCpuMs());
  const c0 = cpu();
  let done = 0;
  await Promise.all(Array.from({ length: loops }, async () => { for (let i = 0; i < 40 / loops; i++) { await step(); done++; } }));
  return (cpu() - c0) / done;
}

/** Completions per second of `step` run back to back by `loops` concurrent loops for about `ms`. */
async function perSecond(ms: number, loops: number, step: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  let done = 0;
  await Promise.all(Array.from({ length: loops }, async () => {
    while (performance.now() - t0 < ms) {
      await step();
      done++;
    }
  }));
  return done / ((performance.now() - t0) / 1000);
}

/** Alternating served / direct rounds: medians of both and of the per-pair ratios. */
async function pairs(served: () => Promise<number>, direct: () => Promise<number>): Promise<{ s: number; d: number; ratio: number }> {
  const s: number[] = [];
  const d: number[] = [];
  for (let i = 0; i < PAIRS; i++) {
    if (i % 2 === 0) { s.push(await served()); d.push(await direct()); } else { d.push(await direct()); s.push(await served()); }
  }
  return { s: median(s), d: median(d), ratio: median(s.map((x, i) => x / d[i]!)) };
}

/** CPU ms per request: Geri (router + engine + worker) and the sidecar vs the direct loop's process. */
async function cpuNote(node: GeriNode, servedStep: () => Promise<void>, directStep: () => Promise<void>): Promise<string> {
  const { enginePid } = (await node.geri.info()) as unknown as { enginePid: number };
  const geri = await cpuPer(CLIENTS, [node.geri.pid, enginePid], servedStep);
  const sidecar = await cpuPer(CLIENTS, [node.sc.nodes[0]!.pid()!], servedStep);
  const direct = await cpuPer(1, undefined, directStep);
  return `CPU per request: geri ${geri.toFixed(1)} ms + sidecar ${sidecar.toFixed(1)} ms vs direct ${direct.toFixed(1)} ms`;
}

interface Comparison { s: number; d: number; ratio: number; notes: string }

/**
 * Starts a Geri (+ sidecar) and the same model for the direct loop, then compares served requests (the
 * producer sends `emb`, then `post` answers one request) with `direct` steps.
 */
async function compare(
  modality: 'image' | 'audio', emb: ReturnType<typeof embeddings>,
  post: (node: GeriNode, id: string) => Promise<void>, direct: (model: LoadedModel) => Promise<void>,
): Promise<Comparison> {
  let g: GeriNode | undefined;
  let model: LoadedModel | undefined;
  try {
    [g, model] = await Promise.all([
      startGeriNode({ modality, maxBatchSize: MAX_BATCH }),
      loadModel(await modelDir(modality === 'image' ? 'tiny-image-gen' : 'tiny-audio-gen'), { sessionOptions: GERI_SESSION_OPTIONS }),
    ]);
    const node = g;
    const m = model;
    const servedStep = async () => {
      const id = dataId();
      await sendEmbeddings(node.producer, id, emb, node.toGeri);
      await post(node, id);
    };
    const directStep = () => direct(m);
    const served = () => perSecond(ROUND_MS, CLIENTS, servedStep);
    await served(); // warm-up (sessions, connections)
    const r = await pairs(served, () => perSecond(ROUND_MS, 1, directStep));
    const cpu = await cpuNote(node, servedStep, directStep);
    return { ...r, notes: `ratio = served / direct (median of ${PAIRS} alternating pairs); ${CLIENTS} clients, max batch ${MAX_BATCH}; served includes the producer's sidecar send; ${cpu}` };
  } finally {
    await g?.stop();
    await model?.close();
  }
}

async function imageRow(image: (typeof IMAGES)[number]): Promise<BenchResult> {
  const emb = embeddings(image.tokens, 7);
  const r = await compare('image', emb, async (node, id) => {
    const res = await node.geri.post('/image/generate', { embedding_data_id: id, height: image.height, width: image.width, num_inference_steps: image.steps });
    if (res.status !== 200) throw new Error(`geri answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
  }, async (model) => {
    await generateImage(model, emb, { height: image.height, width: image.width, numInferenceSteps: image.steps });
  });
  return {
    name: `geri served images/s (${image.width}x${image.height}, ${image.steps} steps, ${image.tokens}-token embeddings via sidecar)`,
    figure: r.s, unit: 'img/s', baseline: r.d, baselineName: 'direct generateImage loop', ratio: r.ratio, notes: r.notes,
  };
}

async function audioRow(): Promise<BenchResult> {
  const emb = embeddings(AUDIO.frames, 8);
  const r = await compare('audio', emb, async (node, id) => {
    const res = await node.geri.post('/audio/generate', { embedding_data_id: id, chunk_size: AUDIO.chunk });
    const text = await res.text();
    if (res.status !== 200 || !text.includes('event: done')) throw new Error(`geri answered ${res.status}: ${text.slice(0, 200)}`);
  }, async (model) => {
    for await (const _ of generateAudio(model, emb, { chunkSize: AUDIO.chunk })) { /* drain */ }
  });
  const seconds = (AUDIO.frames * 240) / 24_000; // audio seconds per request
  return {
    name: `geri served audio s/s (${AUDIO.frames} frames = ${seconds} s of audio per request, chunk ${AUDIO.chunk}, SSE PCM16)`,
    figure: r.s * seconds, unit: 'audio s/s', baseline: r.d * seconds, baselineName: 'direct generateAudio loop', ratio: r.ratio, notes: r.notes,
  };
}

export async function run(): Promise<BenchResult[]> {
  const rows: BenchResult[] = [];
  for (const image of IMAGES) rows.push(await imageRow(image));
  return [...rows, await audioRow()];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const results = await run();
  console.log(formatTable(results));
  for (const r of results) if (r.notes) console.log(`- ${r.name}: ${r.notes}`);
  process.exit(0);
}
