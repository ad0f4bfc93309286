import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { startTracing, type Tracing } from '../../helpers/tracing.js';
import { ECHO_APP, startPlatform, type TestPlatform } from '../../helpers/platform.js';

// This process (gateway + dispatcher) records to memory; the app function (a child process) exports over
// OTLP/HTTP to a collector run by this test. `p` sends CloudEvents (the Knative path); `inProcess` runs task graphs
// in its app function (plain `up`'s default).
let tracing: Tracing;
let p: TestPlatform;
let inProcess: TestPlatform;

test.before(async () => {
  tracing = await startTracing();
  p = await startPlatform({ devices: 1, childEnv: tracing.childEnv, dispatch: 'cloudevent' });
  await p.register(ECHO_APP);
  inProcess = await startPlatform({ devices: 1, childEnv: tracing.childEnv });
  await inProcess.register(ECHO_APP);
});
test.after.always(async () => {
  await p?.stop();
  await inProcess?.stop();
  await tracing?.stop();
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const ROOT_SPAN = '00f067aa0ba902b7';

test('one trace runs gateway -> app function -> dispatcher -> executor call, each span the child of the previous hop', async (t) => {
  const res = await p.invoke('echo', { text: 'traced' }, { headers: { traceparent: `00-${TRACE_ID}-${ROOT_SPAN}-01` } });
  t.is(res.status, 200);
  await res.text();

  const all = () => tracing.spans(TRACE_ID);
  const find = (re: RegExp) => all().find((s) => re.test(s.name));
  await waitUntil('every hop exported its span', () => find(/^gateway POST/) && find(/^function POST \/invoke/) && find(/^function\.dispatch/) && find(/^dispatcher\.invoke/), { timeoutMs: 15_000 });

  const gateway = find(/^gateway POST/)!;
  const fn = find(/^function POST \/invoke/)!;
  const dispatch = find(/^function\.dispatch/)!;
  const dispatcher = find(/^dispatcher\.invoke/)!;
  t.is(gateway.parentSpanId, ROOT_SPAN, 'the gateway continues the caller\'s trace');
  t.not(fn.service, 'in-process', 'the app function is a child process');
  t.is(fn.parentSpanId, gateway.spanId, 'the app function is a child of the gateway');
  t.is(dispatch.parentSpanId, fn.spanId, 'the CloudEvent is sent inside the function span');
  t.is(dispatcher.parentSpanId, dispatch.spanId, 'the dispatcher continues the traceparent carried by the CloudEvent');
  const executorCall = all().find((s) => s.parentSpanId === dispatcher.spanId);
  t.truthy(executorCall, 'the dispatcher opens a span for the executor call under its own');
});

test('in-process dispatch: dispatcher.invoke runs in the app function as the child of its function span, and the executor call under it', async (t) => {
  const traceId = '5cf92f3577b34da6a3ce929d0e0e4737';
  const res = await inProcess.invoke('echo', { text: 'traced' }, { headers: { traceparent: `00-${traceId}-${ROOT_SPAN}-01` } });
  t.is(res.status, 200);
  await res.text();

  const all = () => tracing.spans(traceId);
  const find = (re: RegExp) => all().find((s) => re.test(s.name));
  await waitUntil('every hop exported its span', () => find(/^function POST \/invoke/) && find(/^dispatcher\.invoke/) && find(/^dispatcher\.call /), { timeoutMs: 15_000 });
  const fn = find(/^function POST \/invoke/)!;
  const dispatcher = find(/^dispatcher\.invoke/)!;
  t.is(dispatcher.service, fn.service, 'graph execution runs in the app function process');
  t.is(dispatcher.parentSpanId, fn.spanId, 'dispatcher.invoke is the child of the function span');
  t.is(find(/^dispatcher\.call /)!.parentSpanId, dispatcher.spanId, 'the executor call is a child of dispatcher.invoke');
});
