import test from 'ava';
import { CloudEventDispatcher } from '../../../../functions/runtime/cloudevent-dispatcher.js';
import { openDispatcher } from '../../../../functions/runtime/dispatch-mode.js';
import { upDispatchMode } from '../../../../control/compose/up.js';

const o = { appId: 'a', dispatcherUrl: 'http://127.0.0.1:1' };

test('an app function sends CloudEvents unless told otherwise', async (t) => {
  const opened = await openDispatcher({}, o);
  t.is(opened.mode, 'cloudevent');
  t.true(opened.dispatcher instanceof CloudEventDispatcher);
  await opened.close();
});

test('in-process dispatch without a shared store (Redis or the up store link) is refused, naming both variables', async (t) => {
  const e = await t.throwsAsync(openDispatcher({ CORNSERVE_DISPATCH: 'in-process' }, o));
  t.regex(e.message, /CORNSERVE_STORE_URL/);
  t.regex(e.message, /CORNSERVE_STORE_SOCKET/);
});

test('in-process dispatch over a store link nothing listens on fails at start, naming the socket', async (t) => {
  const e = await t.throwsAsync(openDispatcher({ CORNSERVE_DISPATCH: 'in-process', CORNSERVE_STORE_SOCKET: '/tmp/no-such-cornserve-store.sock' }, o));
  t.regex(e.message, /no-such-cornserve-store\.sock/);
});

test('an unknown dispatch mode is refused, naming the variable', async (t) => {
  const e = await t.throwsAsync(openDispatcher({ CORNSERVE_DISPATCH: 'carrier-pigeon' }, o));
  t.regex(e.message, /CORNSERVE_DISPATCH must be one of cloudevent, in-process/);
});

test('up dispatches in process unless cloudevent is asked for', (t) => {
  t.is(upDispatchMode('auto'), 'in-process');
  t.is(upDispatchMode('in-process'), 'in-process');
  t.is(upDispatchMode('cloudevent'), 'cloudevent');
});
