import test from 'ava';
import { KeyedMutex, Mutex } from '../../../../control/resources/mutex.js';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

test('Mutex runs critical sections one at a time, in arrival order', async (t) => {
  const m = new Mutex();
  const log: string[] = [];
  const gate = deferred();
  const a = m.run(async () => {
    log.push('a start');
    await gate.promise;
    log.push('a end');
  });
  const b = m.run(async () => void log.push('b'));
  await Promise.resolve();
  t.deepEqual(log, ['a start']);
  gate.resolve();
  await Promise.all([a, b]);
  t.deepEqual(log, ['a start', 'a end', 'b']);
});

test('Mutex: a section that throws rejects its caller and does not block the next', async (t) => {
  const m = new Mutex();
  await t.throwsAsync(m.run(async () => Promise.reject(new Error('boom'))), { message: 'boom' });
  t.is(await m.run(async () => 42), 42);
});

test('KeyedMutex serialises one key but lets different keys run at once', async (t) => {
  const km = new KeyedMutex();
  const gate = deferred();
  const log: string[] = [];
  const a1 = km.run('a', async () => {
    await gate.promise;
    log.push('a1');
  });
  const a2 = km.run('a', async () => void log.push('a2'));
  await km.run('b', async () => void log.push('b'));
  t.deepEqual(log, ['b']);
  gate.resolve();
  await Promise.all([a1, a2]);
  t.deepEqual(log, ['b', 'a1', 'a2']);
});

test('KeyedMutex forgets a key once nothing runs or waits on it', async (t) => {
  const km = new KeyedMutex();
  await km.run('x', async () => t.deepEqual(km.busyKeys(), ['x']));
  t.deepEqual(km.busyKeys(), []);
});
