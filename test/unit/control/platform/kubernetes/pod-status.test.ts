import test from 'ava';
import { lastExit, podFailed, podRestarts, podStuck } from '../../../../../control/platform/kubernetes/pod-status.js';

const running = { status: { phase: 'Running', containerStatuses: [{ restartCount: 0, state: { running: {} } }] } };

test('a restarted container reports its last exit code and the signal that killed it', (t) => {
  const pod = { status: { phase: 'Running', containerStatuses: [{ restartCount: 1, state: { running: {} }, lastState: { terminated: { exitCode: 137, reason: 'OOMKilled' } } }] } };
  t.is(podRestarts(pod), 1);
  t.deepEqual(lastExit(pod), { code: 137, signal: 'SIGKILL', reason: 'OOMKilled' });
});

test('a plain non-zero exit has no signal', (t) => {
  const pod = { status: { containerStatuses: [{ restartCount: 2, state: { terminated: { exitCode: 3, reason: 'Error' } } }] } };
  t.deepEqual(lastExit(pod), { code: 3, signal: null, reason: 'Error' });
});

test('a failed pod is reported with its reason', (t) => {
  t.deepEqual(podFailed({ status: { phase: 'Failed', reason: 'Evicted' } }), { code: null, signal: null, reason: 'Evicted' });
});

test('a running pod has not failed, restarted or got stuck', (t) => {
  t.is(podFailed(running), undefined);
  t.is(podRestarts(running), 0);
  t.is(podStuck(running), undefined);
});

test('an image that cannot be pulled makes a stuck pod', (t) => {
  const pod = { status: { containerStatuses: [{ state: { waiting: { reason: 'ImagePullBackOff', message: 'back-off pulling image "x"' } } }] } };
  t.is(podStuck(pod), 'ImagePullBackOff: back-off pulling image "x"');
});

test('a container that is still being created is not stuck', (t) => {
  t.is(podStuck({ status: { containerStatuses: [{ state: { waiting: { reason: 'ContainerCreating' } } }] } }), undefined);
});
