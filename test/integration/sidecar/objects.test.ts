/** Objects of each type, 1→1 and group 2→2, inside one node and across two (the reference's test_objs). */
import test from 'ava';
import { startSidecars, type SidecarCluster } from '../../helpers/sidecar.js';
import { newId, receiveInGroups, sendFromGroup } from './transfer.js';

let sc: SidecarCluster;
test.before(async () => { sc = await startSidecars({ nodes: [[0, 1, 2, 3], [4, 5, 6, 7]] }); });
test.after.always(async () => { await sc?.stop(); });

const OBJECTS: Array<[string, unknown]> = [
  ['string', 'héllo wörld'],
  ['bytes', Uint8Array.from([0, 1, 2, 250, 255])],
  ['int', 42],
  ['float', 3.25],
  ['bool', true],
  ['dict', { a: [1, 2, { b: null }], c: 'x' }],
];

const LAYOUTS: Array<[string, number[], number[][]]> = [
  ['1→1 in one node', [0], [[1]]],
  ['2→2 in one node', [0, 1], [[2, 3]]],
  ['2→2 reverse in one node', [2, 3], [[0, 1]]],
  ['1→1 across nodes', [0], [[4]]],
  ['2→2 across nodes', [0, 1], [[4, 5]]],
  ['2→2 reverse across nodes', [6, 7], [[2, 3]]],
];

for (const [kind, value] of OBJECTS) {
  for (const [layout, src, dst] of LAYOUTS) {
    test(`${kind} object arrives intact ${layout}`, async (t) => {
      const id = newId();
      await sendFromGroup(sc, src, id, dst, [value]);
      await receiveInGroups(t, sc, id, dst, 1, (got) => t.deepEqual(got, value));
    });
  }
}

test('one send reaches several consumer groups on both nodes', async (t) => {
  const id = newId();
  await sendFromGroup(sc, [0], id, [[1], [2, 3], [4, 5]], [{ fanout: true }]);
  await receiveInGroups(t, sc, id, [[1], [2, 3], [4, 5]], 1, (got) => t.deepEqual(got, { fanout: true }));
});
