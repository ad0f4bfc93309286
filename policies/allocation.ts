/**
 * The reference allocation policy, as pure functions over the inventory (nothing here mutates its input):
 * an allocation of n devices is colocated on one node; the node with the most free devices wins, ties go to
 * the node where the owner has fewer devices already (spread), then to the node name. Devices are taken in
 * local-rank order. Global ranks are contiguous from 0 in node order; local ranks per node from 0.
 */
import type { DeviceRef, NodeInventory } from '../lib/store.js';
import type { NodeDevices } from '../lib/platform.js';
import { CannotColocateError, DeviceOwnershipError, NotEnoughDevicesError } from '../lib/resource-errors.js';

export type Inventory = NodeInventory[];

export interface Allocation {
  inventory: Inventory;
  devices: DeviceRef[];
}

export function buildInventory(nodes: NodeDevices[], sidecarUrls: Record<string, string> = {}): Inventory {
  let globalRank = 0;
  return nodes.map(({ node, devices, deviceKind }) => ({
    node,
    ...(deviceKind ? { deviceKind } : {}),
    ...(sidecarUrls[node] ? { sidecarUrl: sidecarUrls[node] } : {}),
    devices: Array.from({ length: devices }, (_, localRank) => ({ node, globalRank: globalRank++, localRank, owner: null })),
  }));
}

export const freeCount = (inv: Inventory): number => inv.reduce((n, node) => n + freeOn(node), 0);

export const devicesOf = (inv: Inventory, owner: string): DeviceRef[] =>
  inv.flatMap((node) => node.devices.filter((d) => d.owner === owner).map(toRef));

/** n devices on one node for `owner`. NotEnoughDevicesError / CannotColocateError (both 409 INSUFFICIENT_DEVICES). */
export function allocate(inv: Inventory, n: number, owner: string): Allocation {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`device count must be a positive integer, got ${n}`);
  const free = freeCount(inv);
  if (free < n) throw new NotEnoughDevicesError(n, free);
  const best = rankNodes(inv, owner)[0]!;
  if (freeOn(best) < n) throw new CannotColocateError(n, freeOn(best));
  const taken = new Set(best.devices.filter((d) => d.owner === null).sort((a, b) => a.localRank - b.localRank).slice(0, n).map((d) => d.globalRank));
  const inventory = setOwner(inv, taken, owner);
  return { inventory, devices: devicesWithRanks(inventory, taken) };
}

/** `chunks` colocated groups of `size` devices each, all or nothing (each group may sit on a different node). */
export function allocateChunks(inv: Inventory, chunks: number, size: number, owner: string): { inventory: Inventory; groups: DeviceRef[][] } {
  if (freeCount(inv) < chunks * size) throw new NotEnoughDevicesError(chunks * size, freeCount(inv));
  const groups: DeviceRef[][] = [];
  let inventory = inv;
  for (let i = 0; i < chunks; i++) {
    const a = allocate(inventory, size, owner);
    inventory = a.inventory;
    groups.push(a.devices);
  }
  return { inventory, groups };
}

/** Frees every device of `owner`. */
export function freeOwner(inv: Inventory, owner: string): Allocation {
  const ranks = new Set(devicesOf(inv, owner).map((d) => d.globalRank));
  return { inventory: setOwner(inv, ranks, null), devices: devicesWithRanks(inv, ranks) };
}

/** Frees exactly these devices; each must be owned by `owner`. */
export function freeDevices(inv: Inventory, devices: DeviceRef[], owner: string): Inventory {
  const ranks = new Set(devices.map((d) => d.globalRank));
  for (const d of ranksIn(inv, ranks)) {
    if (d.owner !== owner) throw new DeviceOwnershipError(`device ${d.globalRank} on ${d.node} is owned by ${d.owner ?? 'nobody'}, not ${owner}`);
  }
  return setOwner(inv, ranks, null);
}

/** Marks these devices as `owner`'s (recovery: re-owning what the Store says a task had); each must be free or already its own. */
export function claimDevices(inv: Inventory, devices: DeviceRef[], owner: string): Inventory {
  const ranks = new Set(devices.map((d) => d.globalRank));
  for (const d of ranksIn(inv, ranks)) {
    if (d.owner !== null && d.owner !== owner) throw new DeviceOwnershipError(`device ${d.globalRank} on ${d.node} is owned by ${d.owner}, not free for ${owner}`);
  }
  for (const want of devices) {
    const have = ranksIn(inv, new Set([want.globalRank]))[0]!;
    if (have.node !== want.node || have.localRank !== want.localRank) throw new DeviceOwnershipError(`device ${want.globalRank} is ${have.node}/${have.localRank} now, not ${want.node}/${want.localRank}`);
  }
  return setOwner(inv, ranks, owner);
}

/** Nodes with at least one free device, best first: most free, then fewest of `owner`'s devices, then name. */
function rankNodes(inv: Inventory, owner: string): NodeInventory[] {
  const mine = (node: NodeInventory) => node.devices.filter((d) => d.owner === owner).length;
  return inv
    .filter((node) => freeOn(node) > 0)
    .sort((a, b) => freeOn(b) - freeOn(a) || mine(a) - mine(b) || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
}

const freeOn = (node: NodeInventory) => node.devices.filter((d) => d.owner === null).length;

const toRef = ({ node, globalRank, localRank }: DeviceRef): DeviceRef => ({ node, globalRank, localRank });

function ranksIn(inv: Inventory, ranks: Set<number>) {
  const found = inv.flatMap((node) => node.devices.filter((d) => ranks.has(d.globalRank)));
  if (found.length !== ranks.size) {
    const known = new Set(found.map((d) => d.globalRank));
    throw new DeviceOwnershipError(`device(s) ${[...ranks].filter((r) => !known.has(r)).join(', ')} not in the inventory`);
  }
  return found;
}

const devicesWithRanks = (inv: Inventory, ranks: Set<number>): DeviceRef[] =>
  inv.flatMap((node) => node.devices.filter((d) => ranks.has(d.globalRank)).map(toRef));

const setOwner = (inv: Inventory, ranks: Set<number>, owner: string | null): Inventory =>
  inv.map((node) => ({ ...node, devices: node.devices.map((d) => (ranks.has(d.globalRank) ? { ...d, owner } : { ...d })) }));
