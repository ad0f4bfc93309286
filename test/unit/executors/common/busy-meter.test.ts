import test from 'ava';
import { BusyMeter } from '../../../../executors/common/busy-meter.js';

test('busy time counts the time with at least one request served, overlapping requests once', (t) => {
  let now = 1000;
  const meter = new BusyMeter(() => now);
  now = 1100;
  meter.begin(); // busy from 1100
  now = 1200;
  meter.begin(); // overlaps
  now = 1300;
  meter.end();
  now = 1400;
  meter.end(); // idle from 1400
  now = 1600;
  t.deepEqual(meter.reading(), { busyMs: 300, uptimeMs: 600 });
  meter.begin();
  now = 1650;
  t.deepEqual(meter.reading(), { busyMs: 350, uptimeMs: 650 }, 'a request being served counts up to now');
});
