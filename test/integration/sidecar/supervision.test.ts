/**
 * The node sidecars `up` runs are supervised: a SIGKILLed sidecar is noticed, its shared memory removed, and it is
 * started again on the same socket, where executors' clients reconnect; stopping removes every segment, also a dead
 * sidecar's. Real sidecar processes, real /dev/shm segments.
 */
import test from 'ava';
import { existsSync } from 'node:fs';
import { startNodeSidecars, type NodeSidecars, type SidecarState } from '../../../control/compose/sidecars.js';
import { SidecarClient } from '../../../sidecar/client/client.js';
import { listSegments } from '../../../sidecar/shm/segment.js';
import { waitUntil } from '../../../lib/wait.js';

const quiet = () => {};

/** A node name of this test only: its segments are told apart from other sidecars' on this machine. */
const nodeName = (what: string) => `sup-${what}-${process.pid}`;

function segmentsOfPid(node: string, pid: number): string[] {
  return listSegments(node).filter((f) => f.includes(`-${pid}-`));
}

function changes(sc: NodeSidecars): Array<[string, SidecarState]> {
  const seen: Array<[string, SidecarState]> = [];
  sc.onChange((node, state) => seen.push([node, state]));
  return seen;
}

test('a killed sidecar is restarted on the same socket, its segment removed, and clients reconnect', async (t) => {
  const node = nodeName('restart');
  const sc = await startNodeSidecars({ nodes: [{ node, devices: 2, deviceKind: 'cpu' }], sink: quiet, supervision: { healthCheck: { intervalMs: 200 }, restartBackoff: { initialMs: 100 } } });
  t.teardown(() => sc.stop());
  const seen = changes(sc);
  const socketPath = sc.urls[node]!.slice('unix:'.length);
  const producer = await SidecarClient.connect({ rank: 0, socketPath });
  const consumer = await SidecarClient.connect({ rank: 1, socketPath });
  t.teardown(() => { producer.close(); consumer.close(); });
  const first = sc.pid(node)!;
  t.is(segmentsOfPid(node, first).length, 1);

  process.kill(first, 'SIGKILL');
  await waitUntil('the sidecar is down', () => sc.states()[node] === 'down', { timeoutMs: 30_000, intervalMs: 20 });
  await waitUntil('the sidecar is up again', () => sc.states()[node] === 'up', { timeoutMs: 90_000, intervalMs: 50 });

  const second = sc.pid(node)!;
  t.not(second, first);
  t.deepEqual(seen, [[node, 'down'], [node, 'up']]);
  t.deepEqual(segmentsOfPid(node, first), [], 'the dead sidecar\'s segment is removed');
  t.is(segmentsOfPid(node, second).length, 1);
  // The same clients, reconnected to the new sidecar on the same socket.
  await producer.send({ hello: 'again' }, 'after-restart', [[1]], { timeoutMs: 10_000 });
  t.deepEqual(await consumer.recv('after-restart', 0, { timeoutMs: 10_000 }), { hello: 'again' });
});

test('stopping removes every segment, also the one of a sidecar killed just before', async (t) => {
  const node = nodeName('stop');
  // A long backoff: the sidecar is still down (not restarted) when stop() runs.
  const sc = await startNodeSidecars({ nodes: [{ node, devices: 1, deviceKind: 'cpu' }], sink: quiet, supervision: { restartBackoff: { initialMs: 60_000 } } });
  const pid = sc.pid(node)!;
  const socketPath = sc.urls[node]!.slice('unix:'.length);
  process.kill(pid, 'SIGKILL');
  await waitUntil('the sidecar is down', () => sc.states()[node] === 'down', { timeoutMs: 30_000, intervalMs: 20 });
  await sc.stop();
  t.deepEqual(listSegments(node), []);
  t.false(existsSync(socketPath));
});
