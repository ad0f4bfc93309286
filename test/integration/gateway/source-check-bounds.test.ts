/**
 * The app-source check runs user code in a bounded process: a minimal environment (nothing of the gateway's),
 * a bounded heap and a bounded CPU time. Real check processes.
 */
import test from 'ava';
import { checkAppSource } from '../../../control/gateway/source-check.js';
import { echoAppSource } from '../../helpers/platform.js';

test('a module that allocates forever is refused naming the memory bound', async (t) => {
  const source = `const held = []; for (;;) held.push(new Array(100_000).fill(1));\n${echoAppSource('hog')}`;
  const result = await checkAppSource(source, undefined, { heapMiB: 64, timeoutMs: 600_000 });
  t.false(result.ok);
  t.regex(result.ok ? '' : result.problems.join('\n'), /more than 64 MiB of memory/);
});

test('a module that spins forever is refused naming the CPU-time bound', async (t) => {
  const source = `for (;;) {}\n${echoAppSource('spin')}`;
  const result = await checkAppSource(source, undefined, { cpuSeconds: 3, timeoutMs: 600_000 });
  t.false(result.ok);
  t.regex(result.ok ? '' : result.problems.join('\n'), /more than 3 s of CPU time/);
});

test('the checked module sees none of the gateway\'s environment', async (t) => {
  process.env.CORNSERVE_CHECK_LEAK_PROBE = 'gateway-only';
  t.teardown(() => { delete process.env.CORNSERVE_CHECK_LEAK_PROBE; });
  const source = `if (process.env.CORNSERVE_CHECK_LEAK_PROBE) throw new Error('saw the gateway environment');\n${echoAppSource('leak')}`;
  const result = await checkAppSource(source);
  t.true(result.ok, result.ok ? '' : result.problems.join('\n'));
});
