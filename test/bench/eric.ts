/**
 * Eric benchmark: images/s served at saturation through HTTP → router (2 preprocessing threads) → ZeroMQ →
 * engine (batches up to B) → shared-memory ring → worker thread (onnxruntime, intraOpNumThreads 1), next to
 * a direct onnxruntime loop with the SAME parallelism, measured in the same run: the same JPEG bytes decoded and
 * preprocessed by 2 threads (a PreprocessPool running run.ts's preprocessImage), batches of B encoded one at a
 * time on one onnxruntime thread (runVision + projector), preprocessing of the next batches overlapping it.
 * So the ratio is the serving overhead (HTTP, ZeroMQ, the engine, the ring), not a difference in threads.
 *
 * Rounds alternate served / direct (order flipped every pair) and each pair gives one ratio; the table shows
 * medians. This 2-core VM is shared, so the figures move with its load; the ratio of a pair is steadier.
 * CPU per image (utime+stime, all threads: Eric's router and engine processes, vs the whole bench process
 * during the direct rounds) is in the notes: it does not depend on how busy the machine is.
 *
 *  - served, no forwarding: items without receivers (the reference's DummyEncoderTask setting);
 *  - served, with sidecar forwarding: every embedding sent to a receiver rank that reads and frees it;
 *  - for context, the direct loop next to the same in one thread, and next to bare encoder+projector runs.
 * Run alone: node --import tsx test/bench/main.ts --only eric
 */
import { processCpuMs } from '../../bench/client/proc.js';
import { PreprocessPool } from '../../executors/common/preprocess-pool.js';
import { logger } from '../../lib/log.js';
import { SidecarClient } from '../../sidecar/client/client.js';
import { loadModel } from '../../executors/models/loader.js';
import { type VisionInput, preprocessImage } from '../../executors/models/preprocess/image.js';
import { encodeImages, runVision } from '../../executors/models/run.js';
import { type EricFixture, TINY_A, dataUrl, startEric } from '../helpers/eric.js';
import { makeImage } from '../helpers/media.js';
import { modelDir } from '../helpers/models.js';
import { startSidecars } from '../helpers/sidecar.js';
import { median, formatTable, keepAlivePoster, ownCpuMs, rate, serial, type BenchResult } from './types.js';

/** Shared with the CLIP tower's bench (clip.ts), so the two rows measure the same shape of load. */
export const BATCH = 8;
export const CLIENTS = 16;
export const ROUND_MS = 3_000;
export const PAIRS = 5;
export const SIZE = 224;
/** Eric's preprocessing threads, and the direct baseline's. */
export const PREPROCESS_THREADS = 2;
/** Direct batches in flight: one encoding while the others are preprocessed. */
const DIRECT_LOOPS = 3;

/** CPU ms (user + system, every thread) of processes so far. */
const cpuMs = (pids: number[]) => pids.reduce((n, pid) => n + processCpuMs(pid), 0);

export async function run(): Promise<BenchResult[]> {
  const jpegs = await Promise.all(Array.from({ length: BATCH }, (_, i) => makeImage(SIZE, SIZE, { seed: i, format: 'jpeg' })));
  const sc = await startSidecars({ nodes: [[0, 1]], slabs: [{ slotBytes: 4096, slots: 1024 }, { slotBytes: 256 * 1024, slots: 256 }] });
  let eric: EricFixture | undefined;
  const direct = await loadModel(await modelDir('tiny-vision'), { sessionOptions: { intraOpNumThreads: 1, interOpNumThreads: 1 } });
  const pool = await PreprocessPool.start<Uint8Array, VisionInput>({
    script: new URL('./threads/preprocess-image.ts', import.meta.url), size: PREPROCESS_THREADS,
    workerData: direct.manifest.preprocessing.image!, log: logger('bench-eric'),
  });
  try {
    eric = await startEric({
      modality: 'image', ranks: [0], sidecarSocket: sc.nodeOf(0).socketPath, maxBatchSize: BATCH, args: ['--preprocess-threads', String(PREPROCESS_THREADS)],
    });
    const ericPids = [eric.process.pid!, (await eric.info()).engine.pid as number];
    const consumer = await SidecarClient.connect({ rank: 1, socketPath: sc.nodeOf(1).socketPath });
    const post = keepAlivePoster(eric.url, CLIENTS); // lean, so the load generator takes as little CPU as it can
    // Request bodies are built once per image; only the id changes.
    const bodies = jpegs.map((b) => (forward: boolean, id: string) =>
      `{"data":[{"id":"${id}","modality":"image","model_id":"${TINY_A}","receiver_sidecar_ranks":${forward ? '[[1]]' : 'null'},"url":"${dataUrl('image/jpeg', b)}"}]}`);
    let n = 0;
    const served = (forward: boolean) => async () => {
      const id = `${(n++).toString(16)}e`;
      const r = await post('/embeddings', bodies[n % BATCH]!(forward, id));
      if (r.status !== 200) throw new Error(`eric answered ${r.status}: ${r.text}`);
      if (forward) {
        await consumer.recv(id, 0, { timeoutMs: 30_000 });
        await consumer.markDone(id, 0);
      }
    };
    const pre = await Promise.all(jpegs.map((b) => preprocessImage(b, direct.manifest.preprocessing.image!)));
    const encodeOneAtATime = serial();
    // Copies: the pool transfers (detaches) what it is given.
    const directLoop = async () => {
      const items = await Promise.all(jpegs.map((b) => pool.run(b.slice())));
      await encodeOneAtATime(() => runVision(direct, items, TINY_A));
    };
    const oneThreadLoop = async () => { await encodeImages(direct, jpegs, TINY_A); };
    const bareLoop = async () => { await runVision(direct, pre, TINY_A); };

    const sidecarPids = sc.nodes.map((x) => x.pid()!);
    const measureServed = async (forward: boolean) => {
      const c0 = cpuMs(ericPids);
      const s0 = cpuMs(sidecarPids);
      const r = await rate(ROUND_MS, CLIENTS, 1, served(forward));
      return { rate: r.rate, cpu: (cpuMs(ericPids) - c0) / r.items, sidecarCpu: (cpuMs(sidecarPids) - s0) / r.items };
    };
    /** The whole bench process (pool threads included); nothing else runs in it during a direct round. */
    const measureDirect = async (loops: number, loop: () => Promise<void>) => {
      const c0 = ownCpuMs();
      const r = await rate(ROUND_MS, loops, BATCH, loop);
      return { rate: r.rate, cpu: (ownCpuMs() - c0) / r.items };
    };

    await rate(1_500, CLIENTS, 1, served(true)); // warm-up: sessions, JIT, sharp, connections, threads
    await rate(1_000, DIRECT_LOOPS, BATCH, directLoop);
    await rate(500, 1, BATCH, oneThreadLoop);
    const s: { rate: number; cpu: number }[] = [];
    const sf: { rate: number; cpu: number; sidecarCpu: number }[] = [];
    const d: { rate: number; cpu: number }[] = [];
    const one: { rate: number; cpu: number }[] = [];
    const bare: number[] = [];
    for (let p = 0; p < PAIRS; p++) {
      const directRound = async () => d.push(await measureDirect(DIRECT_LOOPS, directLoop));
      if (p % 2 === 0) { s.push(await measureServed(false)); await directRound(); } else { await directRound(); s.push(await measureServed(false)); }
      sf.push(await measureServed(true));
      one.push(await measureDirect(1, oneThreadLoop));
      bare.push((await rate(ROUND_MS / 2, 1, BATCH, bareLoop)).rate);
    }
    consumer.close();
    const metrics = await (await fetch(`${eric.url}/metrics`)).text();
    const batchSum = Number(/eric_batch_size_sum\{[^}]*\} ([\d.e+]+)/.exec(metrics)?.[1] ?? NaN);
    const batchCount = Number(/eric_batch_size_count\{[^}]*\} ([\d.e+]+)/.exec(metrics)?.[1] ?? NaN);
    const med = (xs: { rate: number }[]) => median(xs.map((x) => x.rate));
    const medCpu = (xs: { cpu: number }[]) => median(xs.map((x) => x.cpu)).toFixed(2);
    const pairRatio = (xs: { rate: number }[]) => median(xs.map((x, i) => x.rate / d[i]!.rate));
    const setup = `${SIZE}x${SIZE} JPEG, ${CLIENTS} keep-alive HTTP clients (1 image per request), max batch ${BATCH} `
      + `(mean served batch ${(batchSum / batchCount).toFixed(1)}), ${PREPROCESS_THREADS} preprocessing threads, 1 worker (1 onnxruntime thread); `
      + `direct = the same threads: ${PREPROCESS_THREADS} preprocessing threads, batches of ${BATCH} encoded one at a time on 1 onnxruntime thread, `
      + `${DIRECT_LOOPS} batches in flight; ${PAIRS} alternating ${ROUND_MS / 1000} s round pairs, ratio = median of per-pair served/direct`;
    const row = (name: string, xs: { rate: number; cpu: number }[], notes: string, target?: string): BenchResult => ({
      name, figure: med(xs), unit: 'img/s', baseline: med(d),
      baselineName: `direct onnxruntime, ${PREPROCESS_THREADS} preprocessing threads + 1 encoding, batch ${BATCH}`,
      ratio: pairRatio(xs), ...(target ? { target } : {}),
      notes: `${notes}; CPU per image: Eric ${medCpu(xs)} ms (router + engine processes, all threads) vs direct ${medCpu(d)} ms (all threads)`,
    });
    return [
      row('eric served img/s (HTTP → engine → worker, no forwarding)', s, setup, '≥ 0.85'),
      row('eric served img/s with sidecar forwarding (+ receiver recv/markDone)', sf,
        `same, every embedding [64, 256] f32 sent to rank 1 and read there by the bench process; the sidecar server takes ${median(sf.map((x) => x.sidecarCpu)).toFixed(2)} ms CPU per image more on the same 2 cores`),
      {
        name: `direct loop (${PREPROCESS_THREADS} preprocessing threads + 1 encoding) vs the same in one thread`, figure: med(d), unit: 'img/s',
        baseline: med(one), baselineName: `encodeImages(${BATCH} images) in one thread`, ratio: median(d.map((x, i) => x.rate / one[i]!.rate)),
        notes: `context: what the extra threads are worth (the one-thread loop was the baseline before); CPU per image ${medCpu(d)} ms vs ${medCpu(one)} ms`,
      },
      {
        name: 'one-thread direct loop vs bare encoder+projector runs on preprocessed input', figure: med(one), unit: 'img/s', baseline: median(bare),
        baselineName: `runVision(${BATCH} preprocessed)`, ratio: med(one) / median(bare), notes: 'context: the share of the loop that is decode + preprocessing',
      },
    ];
  } finally {
    await eric?.stop();
    await sc.stop();
    await pool.close();
    await direct.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const results = await run();
  console.log(formatTable(results));
  for (const r of results) if (r.notes) console.log(`- ${r.name}: ${r.notes}`);
  process.exit(0);
}
