import test from 'ava';
import {
  allocate,
  allocateChunks,
  buildInventory,
  claimDevices,
  devicesOf,
  freeCount,
  freeDevices,
  freeOwner,
  type Inventory,
} from '../../../../policies/allocation.js';
import { CannotColocateError, DeviceOwnershipError, NotEnoughDevicesError } from '../../../../lib/resource-errors.js';

/** Inventory from a picture: one string per node, one char per device: '.' free, a letter = that owner. */
function inv(picture: Record<string, string>): Inventory {
  const base = buildInventory(Object.entries(picture).map(([node, s]) => ({ node, devices: s.length })));
  return base.map((n) => ({ ...n, devices: n.devices.map((d) => ({ ...d, owner: picture[n.node]![d.localRank] === '.' ? null : picture[n.node]![d.localRank]! })) }));
}
const show = (i: Inventory) => Object.fromEntries(i.map((n) => [n.node, n.devices.map((d) => d.owner ?? '.').join('')]));

test('buildInventory numbers global ranks contiguously across nodes and local ranks per node', (t) => {
  const i = buildInventory([{ node: 'a', devices: 2 }, { node: 'b', devices: 3 }], { b: 'http://b:1' });
  t.deepEqual(i.flatMap((n) => n.devices.map((d) => [d.node, d.globalRank, d.localRank])), [
    ['a', 0, 0], ['a', 1, 1], ['b', 2, 0], ['b', 3, 1], ['b', 4, 2],
  ]);
  t.is(i[1]!.sidecarUrl, 'http://b:1');
  t.is(freeCount(i), 5);
});

const allocations: Array<{ name: string; before: Record<string, string>; n: number; owner: string; after: Record<string, string> }> = [
  { name: 'takes the lowest local ranks of a single node', before: { a: '....' }, n: 2, owner: 'x', after: { a: 'xx..' } },
  { name: 'skips owned devices, keeping local-rank order', before: { a: 'y.y..' }, n: 2, owner: 'x', after: { a: 'yxyx.' } },
  { name: 'picks the node with the most free devices', before: { a: 'yyy.', b: '....' }, n: 1, owner: 'x', after: { a: 'yyy.', b: 'x...' } },
  { name: 'on equal free devices, spreads: prefers the node with fewer of the owner\'s devices', before: { a: 'x...', b: 'y...' }, n: 1, owner: 'x', after: { a: 'x...', b: 'yx..' } },
  { name: 'on equal free and equal owner devices, prefers the node name that sorts first', before: { b: '....', a: '....' }, n: 2, owner: 'x', after: { b: '....', a: 'xx..' } },
  { name: 'most free beats spread', before: { a: 'x...', b: 'yy..' }, n: 1, owner: 'x', after: { a: 'xx..', b: 'yy..' } },
  { name: 'uses every free device when asked for all of them', before: { a: 'y...' }, n: 3, owner: 'x', after: { a: 'yxxx' } },
];
for (const c of allocations) {
  test(`allocate ${c.name}`, (t) => {
    const before = inv(c.before);
    const snapshot = show(before);
    const { inventory, devices } = allocate(before, c.n, c.owner);
    t.deepEqual(show(inventory), c.after);
    t.is(devices.length, c.n);
    t.true(devices.every((d) => d.node === devices[0]!.node));
    t.deepEqual(devices, devicesOf(inventory, c.owner).filter((d) => devices.some((x) => x.globalRank === d.globalRank)));
    t.deepEqual(show(before), snapshot); // the input is untouched
  });
}

const failures: Array<{ name: string; before: Record<string, string>; n: number; error: new (...a: never[]) => Error; message: RegExp }> = [
  { name: 'more devices than are free', before: { a: 'yy..', b: 'y...' }, n: 6, error: NotEnoughDevicesError, message: /6 device\(s\) requested but only 5 free/ },
  { name: 'enough in total but not on one node', before: { a: 'yy..', b: 'y...' }, n: 4, error: CannotColocateError, message: /4 device\(s\) must be on one node but at most 3 are free/ },
  { name: 'a full inventory', before: { a: 'yy' }, n: 1, error: NotEnoughDevicesError, message: /only 0 free/ },
];
for (const c of failures) {
  test(`allocate refuses ${c.name} with 409 INSUFFICIENT_DEVICES`, (t) => {
    const err = t.throws(() => allocate(inv(c.before), c.n, 'x'), { instanceOf: c.error, message: c.message });
    t.like(err, { code: 'INSUFFICIENT_DEVICES', status: 409 });
  });
}

test('allocate rejects a count that is not a positive integer', (t) => {
  t.throws(() => allocate(inv({ a: '..' }), 0, 'x'), { instanceOf: RangeError });
});

test('allocateChunks places each chunk colocated, spreading chunks by the policy', (t) => {
  const { inventory, groups } = allocateChunks(inv({ a: '....', b: '....' }), 2, 2, 'x');
  t.deepEqual(show(inventory), { a: 'xx..', b: 'xx..' });
  t.deepEqual(groups.map((g) => g.map((d) => d.node)), [['a', 'a'], ['b', 'b']]);
});

test('allocateChunks is all or nothing when a later chunk cannot be colocated', (t) => {
  const before = inv({ a: '...', b: 'y..' });
  t.throws(() => allocateChunks(before, 2, 3, 'x'), { instanceOf: NotEnoughDevicesError });
  t.throws(() => allocateChunks(inv({ a: '...', b: 'yy.' }), 2, 2, 'x'), { instanceOf: CannotColocateError });
  t.deepEqual(show(before), { a: '...', b: 'y..' });
});

test('freeOwner frees only the owner\'s devices and returns them', (t) => {
  const { inventory, devices } = freeOwner(inv({ a: 'xyx.', b: 'x...' }), 'x');
  t.deepEqual(show(inventory), { a: '.y..', b: '....' });
  t.deepEqual(devices.map((d) => d.globalRank), [0, 2, 4]);
});

test('freeDevices frees exactly the given devices', (t) => {
  const before = inv({ a: 'xxx.' });
  t.deepEqual(show(freeDevices(before, devicesOf(before, 'x').slice(0, 2), 'x')), { a: '..x.' });
});

test('freeDevices refuses a device owned by someone else', (t) => {
  const before = inv({ a: 'xy' });
  t.throws(() => freeDevices(before, devicesOf(before, 'y'), 'x'), { instanceOf: DeviceOwnershipError, message: /owned by y, not x/ });
});

test('freeDevices refuses a device that is not in the inventory', (t) => {
  t.throws(() => freeDevices(inv({ a: 'x' }), [{ node: 'a', globalRank: 7, localRank: 7 }], 'x'), { instanceOf: DeviceOwnershipError, message: /7 not in the inventory/ });
});

test('claimDevices re-owns free devices and refuses ones another owner holds', (t) => {
  const before = inv({ a: '.y..' });
  t.deepEqual(show(claimDevices(before, [{ node: 'a', globalRank: 2, localRank: 2 }], 'x')), { a: '.yx.' });
  t.throws(() => claimDevices(before, [{ node: 'a', globalRank: 1, localRank: 1 }], 'x'), { instanceOf: DeviceOwnershipError });
});
