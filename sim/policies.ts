/**
 * The live platform's decision modules, imported (never copied) by the simulator: every simulated decision goes
 * through these references, and test/unit/sim/policies.test.ts checks they are the live modules' own exports.
 */
export { allocate, buildInventory, type Inventory } from '../control/resources/allocation.js';
export { pickLeastOutstanding } from '../control/dispatcher/pick.js';
export { findForwards, wireDataForwards } from '../control/dispatcher/wiring.js';
export { Scheduler as EricScheduler } from '../executors/eric/engine/scheduler.js';
export { RequestQueue as GeriRequestQueue } from '../executors/geri/engine/scheduler.js';
export { admitCount } from '../executors/llm/admission.js';
export { freeDevices } from '../control/resources/allocation.js';
export { Autoscaler, type AutoscalerOptions, type TaskSnapshot } from '../control/autoscaler/autoscaler.js';
export { planPool } from '../control/autoscaler/pool.js';
export { estimateCapacity } from '../control/autoscaler/capacity.js';
