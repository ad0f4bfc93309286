/**
 * Property-based fuzzing of the CLI's parsers (fast-check): numbers, durations, deadlines and the workload options.
 * Any text either parses to a finite, in-range value or is refused with the CLI's own one-line error naming the
 * option — never another exception, NaN, Infinity (unless asked for) or a negative count.
 */
import test from 'ava';
import fc from 'fast-check';
import { configureFuzz } from '../../helpers/fuzz.js';
import { benchConfig, type RawBenchOptions } from '../../../bench/client/config.js';
import { CliError } from '../../../lib/cli-errors.js';
import { requestDeadline } from '../../../control/gateway/deadline.js';
import { BadRequestError } from '../../../control/gateway/errors.js';

configureFuzz({ numRuns: 300 });

const DEFAULTS: RawBenchOptions = {
  api: 'invoke', app: 'echo', requestRate: '10', burstiness: '1', pattern: 'constant', seed: '0', inputLen: '32', outputLen: '8', rangeRatio: '0',
  imageSize: '64x64', audioSeconds: '1', videoFrames: '2', soakSampleS: '5', requestTimeout: '300', drainTimeout: '30', plots: false,
};

/** Text a user might type for a number: numerals, huge, negative, exponent, hex, unicode digits, blanks. */
const numberish = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.double().map(String),
  fc.bigInt().map(String),
  fc.constantFrom('', ' ', '1e400', '-1e400', '-0', '0x10', '1_000', '١٢', 'Infinity', 'NaN', '9007199254740993', '1.5', '-1', '0', '5s', '1e-400'),
);
const NUMERIC: Array<keyof RawBenchOptions> = ['requestRate', 'burstiness', 'maxConcurrency', 'numRequests', 'duration', 'seed', 'inputLen', 'outputLen', 'rangeRatio', 'audioSeconds', 'videoFrames', 'soakSampleS', 'requestTimeout', 'drainTimeout'];
const TEXTUAL: Array<keyof RawBenchOptions> = ['pattern', 'mix', 'imageSize', 'slo', 'sweepRates', 'soak'];
const workloadText = fc.oneof(fc.string({ unit: 'binary', maxLength: 30 }), fc.constantFrom('text:-1', 'text:1e400', 'image:NaN', 'on-off:0', 'on-off:-5:2', 'step:1,,2:10', 'step:1e400:1', '0x0', '-64x64', '1e9x1e9', 'ttft_ms=-1', 'ttft_ms=', ',', ':', 'text:1,text:1'));

/** benchConfig's result or its CliError; anything else thrown fails the property. */
function configOrCliError(o: RawBenchOptions): ReturnType<typeof benchConfig> | CliError {
  try {
    return benchConfig(o);
  } catch (e) {
    if (e instanceof CliError) return e;
    throw new Error(`not a CliError: ${(e as Error)?.constructor?.name}: ${(e as Error)?.message}`);
  }
}

test('any text in a numeric bench option is a finite value or a CliError naming the option', (t) => {
  fc.assert(fc.property(fc.constantFrom(...NUMERIC), numberish, (key, text) => {
    const out = configOrCliError({ ...DEFAULTS, [key]: text });
    if (out instanceof CliError) return /^--[a-z-]+/.test(out.message) || /--[a-z-]+/.test(out.message);
    const values = [out.burstiness, out.seed, out.mix.inputLen, out.mix.outputLen, out.mix.rangeRatio, out.mix.audioSeconds, out.mix.videoFrames, out.soakSampleMs, out.requestTimeoutMs, out.drainTimeoutMs, out.limit.count ?? 0, out.limit.durationMs ?? 0, out.maxConcurrency ?? 1];
    return values.every((v) => Number.isFinite(v) && v >= 0) && (out.rate === Infinity ? text === 'inf' : Number.isFinite(out.rate) && out.rate > 0);
  }));
  t.pass();
});

test('any text in a workload option (pattern, mix, size, SLO, rates, soak) is parsed or refused with a CliError', (t) => {
  fc.assert(fc.property(fc.constantFrom(...TEXTUAL), workloadText, (key, text) => {
    const out = configOrCliError({ ...DEFAULTS, [key]: text });
    if (out instanceof CliError) return out.message.length > 0;
    const m = out.mix;
    return m.image.width > 0 && m.image.height > 0 && Number.isFinite(m.image.width * m.image.height)
      && m.mix.every((x) => Number.isFinite(x.weight) && x.weight > 0)
      && (out.sweepRates ?? []).every((r) => Number.isFinite(r) && r > 0)
      && (out.soakMinutes === undefined || (Number.isFinite(out.soakMinutes) && out.soakMinutes > 0))
      && Object.values(out.slo ?? {}).every((v) => Number.isFinite(v) && v > 0);
  }));
  t.pass();
});

test('any deadline header is an epoch-ms deadline, any timeout_ms one in the future, or else a 400 BAD_REQUEST', (t) => {
  const NOW = 1_800_000_000_000;
  fc.assert(fc.property(fc.constantFrom('header', 'query'), fc.oneof(numberish, fc.array(numberish, { maxLength: 3 }), fc.anything()), (where, value) => {
    const req = where === 'header' ? { headers: { 'x-cornserve-deadline': value as string } } : { headers: {}, query: { timeout_ms: value } };
    try {
      const d = requestDeadline(req, NOW);
      return Number.isSafeInteger(d) && (where === 'header' || d > NOW);
    } catch (e) {
      if (e instanceof BadRequestError) return e.status === 400;
      throw new Error(`not a BadRequestError: ${(e as Error)?.constructor?.name}: ${(e as Error)?.message}`);
    }
  }));
  t.pass();
});

// Regressions: the fuzzer's shrunk failures.

test('a --mix weight past double range is refused, not turned into NaN weights', (t) => {
  t.throws(() => benchConfig({ ...DEFAULTS, mix: 'text:1e400' }), { instanceOf: CliError, message: /--mix: the weight of 'text' is not a finite number/ });
});

test('a seconds option past node\'s largest timer is refused (the timer would fire at once)', (t) => {
  t.throws(() => benchConfig({ ...DEFAULTS, drainTimeout: '1.797693134862316e+305' }), { instanceOf: CliError, message: /--drain-timeout must be .* ≤ 2147483/ });
  t.throws(() => benchConfig({ ...DEFAULTS, requestTimeout: '1e10' }), { instanceOf: CliError, message: /--request-timeout/ });
});
