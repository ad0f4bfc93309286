import test from 'ava';
import { benchConfig, type RawBenchOptions } from '../../../../bench/client/config.js';

const defaults: RawBenchOptions = {
  api: 'chat', model: 'mllm', requestRate: 'inf', burstiness: '1', pattern: 'constant', seed: '0', inputLen: '64', outputLen: '32',
  rangeRatio: '0', imageSize: '224x224', audioSeconds: '2', videoFrames: '4', soakSampleS: '5', requestTimeout: '300', drainTimeout: '30', plots: true,
};
const cfg = (over: Partial<RawBenchOptions>) => benchConfig({ ...defaults, ...over });

test('defaults: 100 requests at once, text only, a timestamped result dir', (t) => {
  const c = cfg({});
  t.deepEqual(c.limit, { count: 100 });
  t.is(c.rate, Infinity);
  t.deepEqual(c.mix.mix, [{ kind: 'text', weight: 1 }]);
  t.regex(c.resultDir, /^bench-results\/\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d$/);
});

test('a soak runs for its minutes with a mixed load', (t) => {
  const c = cfg({ requestRate: '2', soak: '3' });
  t.deepEqual(c.limit, { durationMs: 180_000 });
  t.deepEqual(c.mix.mix.map((m) => m.kind), ['text', 'image', 'audio']);
});

test('each contradictory or malformed option is an error naming it', (t) => {
  t.throws(() => cfg({ model: undefined }), { message: /--api chat needs --model/ });
  t.throws(() => cfg({ api: 'invoke', model: undefined }), { message: /--api invoke needs --app/ });
  t.throws(() => cfg({ app: 'x' }), { message: /--app goes with --api invoke/ });
  t.throws(() => cfg({ requestRate: 'fast' }), { message: /--request-rate must be a positive number/ });
  t.throws(() => cfg({ duration: '10' }), { message: /would send without end/ });
  t.throws(() => cfg({ requestRate: '2', soak: '1', duration: '10' }), { message: /--soak sets the duration/ });
  t.throws(() => cfg({ numRequests: '2.5' }), { message: /--num-requests must be a positive integer/ });
  t.throws(() => cfg({ rangeRatio: '1' }), { message: /--range-ratio must be below 1/ });
  t.throws(() => cfg({ sweepRates: '1,2', soak: '1', requestRate: '1' }), { message: /pick one/ });
  t.throws(() => cfg({ dataset: 'x.jsonl', mix: 'text:1' }), { message: /--dataset gives ready requests/ });
  t.throws(() => cfg({ imageSize: '0x10' }), { message: /--image-size/ });
});
