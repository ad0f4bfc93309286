/**
 * The live platform's decision modules, imported (never copied) by the simulator: every simulated decision goes
 * through these references, and test/unit/sim/policies.test.ts checks they are the live modules' own exports.
 */
export { allocate, buildInventory, type Inventory } from '../policies/allocation.js';
export { pickLeastOutstanding } from '../policies/pick.js';
export { findForwards, wireDataForwards } from '../policies/wiring.js';
export { Scheduler as EricScheduler } from '../policies/eric-scheduler.js';
export { RequestQueue as GeriRequestQueue } from '../policies/geri-scheduler.js';
export { admitCount } from '../policies/admission.js';
export { freeDevices } from '../policies/allocation.js';
export { Autoscaler, type AutoscalerOptions, type TaskSnapshot } from '../policies/autoscaler.js';
export { planPool } from '../policies/pool.js';
export { estimateCapacity } from '../policies/capacity.js';
