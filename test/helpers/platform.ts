/**
 * A whole platform in-process on free ports, for cross-component tests: the same composition as
 * `cornserve up` (store, LocalPlatform, resource manager, dispatcher, gateway), child output collected
 * instead of printed, a fixed admin token. Always `await p.stop()` (test.after.always).
 *
 *   const p = await startPlatform();
 *   await p.register(ECHO_APP);                          // the final SSE event, or throws on an error event
 *   const res = await p.invoke('echo', { text: 'hi' }); // a fetch Response
 */
import { readFile } from 'node:fs/promises';
import { startCornserve, type Cornserve, type CornserveOptions } from '../../control/compose/up.js';
import type { RegistrationEvent } from '../../control/gateway/app-manager.js';
import { repoRoot } from './repo.js';
import { waitUntil } from '../../lib/wait.js';

export const TEST_ADMIN_TOKEN = 'test-admin-token';

/** The source of a one-task app named `name`: `{text}` -> `{echo: text}` on an echo executor with that service time. */
export const echoAppSource = (name: string, serviceTimeMs = 0) => `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { EchoTask } from 'cornserve/tasks';
const echo = new EchoTask({ serviceTimeMs: ${serviceTimeMs} });
export default defineApp({
  name: '${name}', tasks: { echo },
  request: z.object({ text: z.string() }), response: z.object({ echo: z.string() }),
  async serve(req) { return echo.call({ text: req.text }); },
});`;

/**
 * The source of a streaming app named `name`: `{text, chunks}` -> `chunks` NDJSON lines `{echo, index}`, each after
 * its own call to an echo executor with that service time (so a stream is in flight for chunks × serviceTimeMs).
 */
export const slowStreamAppSource = (name: string, serviceTimeMs: number) => `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { EchoTask } from 'cornserve/tasks';
const echo = new EchoTask({ serviceTimeMs: ${serviceTimeMs} });
export default defineApp({
  name: '${name}', tasks: { echo },
  request: z.object({ text: z.string(), chunks: z.number().int().positive() }),
  response: z.object({ echo: z.string(), index: z.number().int() }),
  async *serve(req) {
    for (let index = 0; index < req.chunks; index++) yield { echo: (await echo.call({ text: req.text })).echo, index };
  },
});`;

/** An NDJSON reply's lines, parsed (rejects when the connection broke mid-stream). */
export async function ndjsonLines(res: Response): Promise<unknown[]> {
  return (await res.text()).split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as unknown);
}

export const ECHO_APP = `${repoRoot}/functions/apps/echo.ts`;

export interface TestPlatform extends Cornserve {
  /** Every child output line so far, as [prefix, line]. */
  readonly lines: Array<[string, string]>;
  /** Registers source text (or a file path ending in .ts); resolves with all SSE events. */
  registerEvents(sourceOrFile: string, opts?: { name?: string; alias?: string; token?: string }): Promise<RegistrationEvent[]>;
  /** Registers and returns the app id; throws with the error event's message on failure. */
  register(sourceOrFile: string, opts?: { name?: string; alias?: string }): Promise<string>;
  invoke(app: string, requestData: unknown, opts?: { timeoutMs?: number; headers?: Record<string, string> }): Promise<Response>;
  /** An authorized POST (admin routes). */
  admin(path: string, body?: unknown): Promise<Response>;
}

export async function startPlatform(options: CornserveOptions = {}): Promise<TestPlatform> {
  const lines: Array<[string, string]> = [];
  const cs = await startCornserve({
    port: 0,
    adminToken: TEST_ADMIN_TOKEN,
    sidecars: false, // echo apps forward no tensors; tests that need a sidecar pass sidecars: true (or start their own)
    logSink: (prefix, line) => void lines.push([prefix, line]),
    // Fixed executor counts unless a test asks for autoscaling (its options) or the default (autoscale: {}):
    // startCornserve autoscales by default, like `cornserve up`.
    autoscale: false,
    ...options,
  });
  const url = (path: string) => new URL(path, cs.gatewayUrl);
  const auth = (token = TEST_ADMIN_TOKEN) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

  const registerEvents: TestPlatform['registerEvents'] = async (sourceOrFile, opts = {}) => {
    const source = /\.ts$/.test(sourceOrFile) && !sourceOrFile.includes('\n') ? await readFile(sourceOrFile, 'utf8') : sourceOrFile;
    const { token, ...rest } = opts;
    const res = await fetch(url('/app/register'), { method: 'POST', headers: auth(token), body: JSON.stringify({ source, ...rest }) });
    if (!res.ok) throw new Error(`register: HTTP ${res.status} ${await res.text()}`);
    const text = await res.text();
    return text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => (JSON.parse(l.slice(6)) as { event: RegistrationEvent }).event);
  };

  return Object.assign(cs, {
    lines,
    registerEvents,
    async register(sourceOrFile: string, opts: { name?: string; alias?: string } = {}) {
      const events = await registerEvents(sourceOrFile, opts);
      const last = events.at(-1);
      if (last?.type !== 'final') throw new Error(`registration failed: ${last?.type === 'error' ? last.message : 'no final event'}`);
      return last.app_id;
    },
    invoke(app: string, requestData: unknown, opts: { timeoutMs?: number; headers?: Record<string, string> } = {}) {
      const q = opts.timeoutMs ? `?timeout_ms=${opts.timeoutMs}` : '';
      return fetch(url(`/app/invoke/${app}${q}`), {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...opts.headers },
        body: JSON.stringify({ request_data: requestData }),
      });
    },
    admin(path: string, body?: unknown) {
      return fetch(url(path), { method: 'POST', headers: auth(), ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    },
  });
}

/**
 * Sends `text` to app `name`, SIGKILLs its app function once the request is waiting on the executor (the
 * dispatcher holds a lease on it; not after a fixed sleep: under load it may not be there yet), and returns the
 * reply to that request with the app's id and the killed function's pid.
 */
export async function crashFunctionMidRequest(p: TestPlatform, name: string, text = 'doomed'): Promise<{ appId: string; pid: number; res: Response }> {
  const appId = p.apps.resolve(name).appId;
  const { pid } = p.platform.processes().find((x) => x.kind === 'app-function' && x.id === appId)!;
  const inFlight = p.invoke(name, { text });
  await waitUntil('the request reached the echo executor', async () => (await p.store.listExecutors()).some((e) => e.outstanding > 0), { timeoutMs: 30_000 });
  process.kill(pid, 'SIGKILL');
  return { appId, pid, res: await inFlight };
}
