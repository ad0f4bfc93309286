/**
 * `cornserve bench` options (strings from commander) → a checked BenchConfig. Every malformed value is a
 * CliError naming its option, raised before any request is sent.
 */
import { CliError } from '../../lib/cli-errors.js';
import { parsePattern, type RatePattern } from '../workload/arrivals.js';
import { parseMix, parseSize, type MixOptions } from '../workload/mix.js';
import { parseRates } from '../metrics/sweep.js';
import { parseSlo, type Slo } from '../metrics/slo.js';

export interface RawBenchOptions {
  api: string;
  model?: string;
  app?: string;
  requestRate: string;
  burstiness: string;
  maxConcurrency?: string;
  numRequests?: string;
  duration?: string;
  pattern: string;
  seed: string;
  mix?: string;
  inputLen: string;
  outputLen: string;
  rangeRatio: string;
  imageSize: string;
  audioSeconds: string;
  videoFrames: string;
  dataset?: string;
  slo?: string;
  sweepRates?: string;
  soak?: string;
  soakSampleS: string;
  resultDir?: string;
  requestTimeout: string;
  drainTimeout: string;
  plots: boolean;
}

export interface BenchConfig {
  api: 'chat' | 'invoke';
  /** The app (invoke) or model (chat) name. */
  target: string;
  rate: number;
  burstiness: number;
  maxConcurrency?: number;
  limit: { count?: number; durationMs?: number };
  pattern: RatePattern;
  seed: number;
  mix: MixOptions;
  dataset?: string;
  slo?: Slo;
  sweepRates?: number[];
  soakMinutes?: number;
  soakSampleMs: number;
  resultDir: string;
  requestTimeoutMs: number;
  drainTimeoutMs: number;
  plots: boolean;
}

/** The mix a soak run uses when --mix is not given ("a mixed load"). */
export const SOAK_MIX = 'text:0.5,image:0.3,audio:0.2';

/** The longest time in seconds a timer can wait (node's setTimeout fires at once past 2^31 − 1 ms): the bound of every seconds option. */
const MAX_SECONDS = 2_147_483;

function number(name: string, text: string, o: { integer?: boolean; min?: number; max?: number; allowZero?: boolean } = {}): number {
  const n = Number(text);
  const ok = text.trim() !== '' && Number.isFinite(n) && (!o.integer || Number.isInteger(n)) && (o.allowZero ? n >= 0 : n > 0) && (o.min === undefined || n >= o.min) && (o.max === undefined || n <= o.max);
  if (!ok) throw new CliError(`${name} must be a ${o.allowZero ? 'non-negative' : 'positive'} ${o.integer ? 'integer' : 'number'}${o.min !== undefined ? ` ≥ ${o.min}` : ''}${o.max !== undefined ? ` ≤ ${o.max}` : ''}, got '${text}'`);
  return n;
}
const seconds = (name: string, text: string, o: { allowZero?: boolean } = {}) => number(name, text, { ...o, max: MAX_SECONDS });

/** Wraps the workload parsers' errors as CliErrors (same message). */
function parsed<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw e instanceof CliError ? e : new CliError((e as Error).message);
  }
}

export const defaultResultDir = (now = new Date()) => `bench-results/${now.toISOString().replace(/[:]/g, '-').replace(/\..*$/, '')}`;

export function benchConfig(o: RawBenchOptions): BenchConfig {
  if (o.api !== 'chat' && o.api !== 'invoke') throw new CliError(`--api must be chat or invoke, got '${o.api}'`);
  const target = o.api === 'chat' ? o.model : o.app;
  if (!target) throw new CliError(o.api === 'chat' ? '--api chat needs --model APP (the app name or alias the OpenAI route serves)' : '--api invoke needs --app APP');
  if (o.api === 'chat' && o.app) throw new CliError('--app goes with --api invoke; with --api chat name the app with --model');
  if (o.api === 'invoke' && o.model) throw new CliError('--model goes with --api chat; with --api invoke name the app with --app');
  const rate = o.requestRate === 'inf' ? Infinity : number('--request-rate', o.requestRate);
  const pattern = parsed(() => parsePattern(o.pattern));
  if (pattern.kind !== 'constant' && rate === Infinity && pattern.kind !== 'step') throw new CliError('--pattern on-off needs a finite --request-rate (the base rate)');
  const soakMinutes = o.soak !== undefined ? number('--soak', o.soak, { max: MAX_SECONDS / 60 }) : undefined;
  const maxConcurrency = o.maxConcurrency !== undefined ? number('--max-concurrency', o.maxConcurrency, { integer: true }) : undefined;
  if (soakMinutes !== undefined && (o.numRequests !== undefined || o.duration !== undefined)) throw new CliError('--soak sets the duration; drop --num-requests and --duration');
  const durationS = soakMinutes !== undefined ? soakMinutes * 60 : o.duration !== undefined ? seconds('--duration', o.duration) : undefined;
  const count = o.numRequests !== undefined ? number('--num-requests', o.numRequests, { integer: true }) : durationS === undefined ? 100 : undefined;
  if (durationS !== undefined && rate === Infinity && maxConcurrency === undefined && pattern.kind === 'constant') {
    throw new CliError('a duration (--duration or --soak) with --request-rate inf would send without end: give a finite --request-rate or --max-concurrency');
  }
  const sweepRates = o.sweepRates !== undefined ? parsed(() => parseRates(o.sweepRates!)) : undefined;
  if (sweepRates && soakMinutes !== undefined) throw new CliError('--sweep-rates and --soak are separate runs: pick one');
  const mixText = o.mix ?? (soakMinutes !== undefined && !o.dataset ? SOAK_MIX : 'text:1');
  if (o.dataset && o.mix) throw new CliError('--dataset gives ready requests: drop --mix');
  const size = parsed(() => parseSize(o.imageSize));
  return {
    api: o.api,
    target,
    rate,
    burstiness: number('--burstiness', o.burstiness),
    ...(maxConcurrency !== undefined ? { maxConcurrency } : {}),
    limit: { ...(count !== undefined ? { count } : {}), ...(durationS !== undefined ? { durationMs: durationS * 1000 } : {}) },
    pattern,
    seed: number('--seed', o.seed, { integer: true, allowZero: true }),
    mix: {
      mix: parsed(() => parseMix(mixText)),
      inputLen: number('--input-len', o.inputLen, { integer: true }),
      outputLen: number('--output-len', o.outputLen, { integer: true }),
      rangeRatio: (() => {
        const r = number('--range-ratio', o.rangeRatio, { allowZero: true });
        if (r >= 1) throw new CliError(`--range-ratio must be below 1, got '${o.rangeRatio}'`);
        return r;
      })(),
      image: size,
      audioSeconds: number('--audio-seconds', o.audioSeconds),
      videoFrames: number('--video-frames', o.videoFrames, { integer: true }),
    },
    ...(o.dataset ? { dataset: o.dataset } : {}),
    ...(o.slo !== undefined ? { slo: parsed(() => parseSlo(o.slo!)) } : {}),
    ...(sweepRates ? { sweepRates } : {}),
    ...(soakMinutes !== undefined ? { soakMinutes } : {}),
    soakSampleMs: seconds('--soak-sample-s', o.soakSampleS) * 1000,
    resultDir: o.resultDir ?? defaultResultDir(),
    requestTimeoutMs: seconds('--request-timeout', o.requestTimeout) * 1000,
    drainTimeoutMs: seconds('--drain-timeout', o.drainTimeout, { allowZero: true }) * 1000,
    plots: o.plots,
  };
}
