/**
 * Resource-manager fixtures: a ResourceManager over a real LocalPlatform (quiet) and a Store, torn down after
 * the test (executors stopped, platform shut down); echo tasks by service time; a descriptor that fails to start.
 */
import { EchoTask } from '../../functions/tasks/echo.js';
import type { UnitTask } from '../../functions/sdk/index.js';
import { descriptorFor } from '../../control/descriptors/registry.js';
import { echoDescriptor } from '../../control/descriptors/echo.js';
import type { TaskDescriptor } from '../../lib/descriptor.js';
import { ResourceManager, type ResourceManagerOptions } from '../../control/resources/manager.js';
import { MemoryStore } from '../../control/store/memory.js';
import type { Store } from '../../lib/store.js';
import { exitAtOnceLaunch, quietPlatform, type QuietPlatform } from './local-platform.js';

/** Echo tasks with this service time get a descriptor whose executor exits at once. */
export const BROKEN_SERVICE_TIME = 999;
/** Echo tasks with this service time run one executor per 2 devices. */
export const TWO_DEVICE_SERVICE_TIME = 222;

export const echoTask = (serviceTimeMs = 0) => new EchoTask({ serviceTimeMs });

const echoBase = echoDescriptor as unknown as TaskDescriptor;
const brokenDescriptor: TaskDescriptor = { ...echoBase, launch: () => exitAtOnceLaunch() };
const twoDeviceDescriptor: TaskDescriptor = { ...echoBase, launch: (task) => ({ ...echoBase.launch(task), devicesPerExecutor: 2 }) };

/** descriptorFor, except echo tasks with BROKEN_SERVICE_TIME fail to start and TWO_DEVICE_SERVICE_TIME ones use 2 devices. */
export function testDescriptors(task: UnitTask): TaskDescriptor {
  if (!(task instanceof EchoTask)) return descriptorFor(task);
  if (task.config.serviceTimeMs === BROKEN_SERVICE_TIME) return brokenDescriptor;
  if (task.config.serviceTimeMs === TWO_DEVICE_SERVICE_TIME) return twoDeviceDescriptor;
  return descriptorFor(task);
}

export interface RmFixture {
  rm: ResourceManager;
  store: Store;
  platform: QuietPlatform;
}

export function startResourceManager(
  t: { teardown(fn: () => unknown): void },
  options: { devices?: number; nodes?: string[]; store?: Store; rm?: Partial<ResourceManagerOptions> } = {},
): RmFixture {
  const store = options.store ?? new MemoryStore();
  const platform = quietPlatform({ devices: options.devices ?? 4, ...(options.nodes ? { nodes: options.nodes } : {}) });
  const rm = new ResourceManager({ store, platform, descriptors: testDescriptors, drainGraceMs: 10_000, taskManager: { drainPollMs: 20 }, ...options.rm });
  t.teardown(async () => {
    await rm.close();
    await platform.shutdown();
  });
  return { rm, store, platform };
}

/** Owner of each device, by global rank ('.' = free), e.g. "ab.." */
export function ownersPicture(rm: ResourceManager, names: Record<string, string> = {}): string {
  return rm.currentInventory().flatMap((n) => n.devices.map((d) => (d.owner === null ? '.' : names[d.owner] ?? '#'))).join('');
}
