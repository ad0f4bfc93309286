import test from 'ava';
import { CloudEventDispatcher } from '../../../../functions/runtime/cloudevent-dispatcher.js';
import { openDispatcher } from '../../../../functions/runtime/dispatch-mode.js';
import { upDispatchMode } from '../../../../control/cli/up.js';

const o = { appId: 'a', dispatcherUrl: 'http://127.0.0.1:1' };

test('an app function sends CloudEvents unless told otherwise', async (t) => {
  const opened = await openDispatcher({}, o);
  t.is(opened.mode, 'cloudevent');
  t.true(opened.dispatcher instanceof CloudEventDispatcher);
  await opened.close();
});

test('in-process dispatch without a shared Redis store is refused, naming the variable', async (t) => {
  const e = await t.throwsAsync(openDispatcher({ CORNSERVE_DISPATCH: 'in-process' }, o));
  t.regex(e.message, /CORNSERVE_STORE_URL/);
});

test('an unknown dispatch mode is refused, naming the variable', async (t) => {
  const e = await t.throwsAsync(openDispatcher({ CORNSERVE_DISPATCH: 'carrier-pigeon' }, o));
  t.regex(e.message, /CORNSERVE_DISPATCH must be one of cloudevent, in-process/);
});

test('up picks in-process with Redis and CloudEvents without; forcing in-process without Redis is refused', (t) => {
  t.is(upDispatchMode('auto', true), 'in-process');
  t.is(upDispatchMode('auto', false), 'cloudevent');
  t.is(upDispatchMode('cloudevent', true), 'cloudevent');
  t.throws(() => upDispatchMode('in-process', false), { message: /needs --redis/ });
});
