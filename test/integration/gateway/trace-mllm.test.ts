/**
 * One W3C trace through the whole multimodal path: gateway → app function → CloudEvent → dispatcher → Eric
 * (router, then its worker's sidecar send) → sidecar → LLM executor (its sidecar receive) → sidecar. The
 * gateway and dispatcher run in this process; every child process — app function, Eric and its engine's worker,
 * the LLM executor, the node's sidecar — exports over OTLP/HTTP to a collector run here (test/helpers/tracing.ts).
 */
import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { exampleApp } from '../../helpers/app-platform.js';
import { dataUrl } from '../../helpers/eric.js';
import { makeImage } from '../../helpers/media.js';
import { modelsDir } from '../../helpers/models.js';
import { startTracing, type CollectedSpan, type Tracing } from '../../helpers/tracing.js';
import { startPlatform, type TestPlatform } from '../../helpers/platform.js';

type SeenSpan = CollectedSpan;

let tracing: Tracing;
let p: TestPlatform;

test.before(async () => {
  tracing = await startTracing();
  p = await startPlatform({ devices: 4, sidecars: true, dispatch: 'cloudevent', childEnv: { CORNSERVE_MODELS_DIR: await modelsDir(), ...tracing.childEnv } });
  await p.register(exampleApp('mllm'));
});
test.after.always(async () => {
  await p?.stop();
  await tracing?.stop();
});

const TRACE_ID = '5a0f2e1c9b8d47e6a3c2b1f0e9d8c7b6';
const ROOT_SPAN = '1f2e3d4c5b6a7980';

test('one trace id joins gateway, app function, dispatcher, Eric, the sidecar and the LLM, each span the child of its caller', async (t) => {
  const png = await makeImage(56, 56, { seed: 3 });
  const res = await p.invoke('mllm', {
    model: 'mllm', max_tokens: 4, temperature: 0,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: dataUrl('image/png', png) } }] }],
  }, { headers: { traceparent: `00-${TRACE_ID}-${ROOT_SPAN}-01` } });
  t.is(res.status, 200, await res.clone().text());
  await res.text();

  const all = (): SeenSpan[] => tracing.spans(TRACE_ID);
  const one = (re: RegExp, parent?: SeenSpan) => all().find((s) => re.test(s.name) && (!parent || s.parentSpanId === parent.spanId));
  const byId = (id: string | undefined) => all().find((s) => s.spanId === id);

  // Wait for the last hop of each branch (children export in batches every 50 ms).
  await waitUntil('every hop exported its spans', () => {
    const names = all().map((s) => s.name);
    return ['function POST', 'function.dispatch', 'sidecar.send', 'sidecar.recv', 'sidecar.server.put', 'sidecar.server.recv', 'llm POST', 'eric POST'].every((n) => names.some((x) => x.startsWith(n)));
  }, { timeoutMs: 30_000 });

  const gateway = one(/^gateway POST \/app\/invoke/)!;
  t.is(gateway?.parentSpanId, ROOT_SPAN, 'the gateway continues the caller\'s trace');
  const fn = one(/^function POST \/invoke/, gateway);
  t.truthy(fn, 'the app function is a child of the gateway');
  const dispatch = one(/^function\.dispatch/, fn);
  t.truthy(dispatch, 'the CloudEvent is sent inside the function span');
  const invoke = one(/^dispatcher\.invoke/, dispatch);
  t.truthy(invoke, 'the dispatcher continues the CloudEvent\'s traceparent');

  // Eric: its router span is the child of the dispatcher's call span; its worker's sidecar send, of the router span.
  const eric = one(/^eric POST \/embeddings/)!;
  t.truthy(eric);
  const ericCall = byId(eric.parentSpanId);
  t.regex(ericCall?.name ?? '', /^dispatcher\.call /);
  t.is(ericCall?.parentSpanId, invoke?.spanId, 'the executor call is a child of dispatcher.invoke');
  const send = one(/^sidecar\.send$/, eric);
  t.truthy(send, 'Eric\'s sidecar send (engine worker, over ZeroMQ and the shm ring) is a child of its router span');
  t.truthy(all().find((s) => /^sidecar\.server\./.test(s.name) && s.service === 'cornserve-sidecar' && s.parentSpanId === send?.spanId), 'the sidecar serves the send inside its trace');

  // The LLM: child of its own dispatcher call; its receive of the embedding, and the sidecar's side of it.
  const llm = one(/^llm POST \/v1\/chat\/completions/)!;
  t.truthy(llm);
  const llmCall = byId(llm.parentSpanId);
  t.regex(llmCall?.name ?? '', /^dispatcher\.call /);
  t.is(llmCall?.parentSpanId, invoke?.spanId);
  const recv = one(/^sidecar\.recv$/, llm);
  t.truthy(recv, 'the LLM\'s sidecar receive is a child of its request span');
  t.truthy(all().find((s) => s.name === 'sidecar.server.recv' && s.parentSpanId === recv?.spanId), 'the sidecar serves the receive inside its trace');

  const services = new Set(all().map((s) => s.service));
  for (const s of ['in-process', 'eric', 'llm', 'cornserve-sidecar']) t.true(services.has(s), `spans of ${s}`);
  t.true([...services].some((s) => s.startsWith('app-function-')), 'spans of the app function');
  t.true([...services].some((s) => s.endsWith('-worker-0')), 'spans of Eric\'s worker');
});
