import test from 'ava';
import { upAutoscaleOptions } from '../../../../control/compose/up.js';

test('up autoscales with the default timings unless --no-autoscale', (t) => {
  t.deepEqual(upAutoscaleOptions({ autoscale: true }), {});
  t.is(upAutoscaleOptions({ autoscale: false, autoscaleTick: 300 }), false);
});

test('up passes the --autoscale-* timings to the autoscaler', (t) => {
  t.deepEqual(upAutoscaleOptions({ autoscale: true, autoscaleTick: 300, autoscaleStableWindow: 4000, autoscalePanicWindow: 1500, autoscaleScaleDownDelay: 1000 }), {
    tickMs: 300,
    autoscaler: { stableWindowMs: 4000, panicWindowMs: 1500, scaleDownDelayMs: 1000 },
  });
});
