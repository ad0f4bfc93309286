/**
 * lib/undici.ts loads the undici package for its own API without making it the process's fetch dispatcher: Node's
 * fetch keeps its own. Each check runs in a fresh Node process (module caches and the dispatcher slot are per process).
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const UNDICI = new URL('../../../lib/undici.ts', import.meta.url).href;

async function inFreshNode(script: string): Promise<string> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { timeout: 60_000 });
  return stdout.trim();
}

test('after loading lib/undici.ts the process-wide fetch dispatcher is not undici\'s Agent', async (t) => {
  const out = await inFreshNode(`
    const { Agent } = await import(${JSON.stringify(UNDICI)});
    console.log(globalThis[Symbol.for('undici.globalDispatcher.1')] instanceof Agent);
  `);
  t.is(out, 'false');
});

test('after loading lib/undici.ts, Node\'s fetch still sends a request that sets its own content-length', async (t) => {
  const out = await inFreshNode(`
    import { createServer } from 'node:http';
    const { Agent } = await import(${JSON.stringify(UNDICI)});
    const server = createServer((req, res) => { req.resume(); req.on('end', () => res.end('ok ' + req.headers['content-length'])); }).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const res = await fetch('http://127.0.0.1:' + server.address().port, { method: 'POST', headers: { 'content-length': '2' }, body: '{}' });
    console.log(await res.text(), typeof new Agent().request);
    server.close();
  `);
  t.is(out, 'ok 2 function');
});
