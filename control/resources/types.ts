/**
 * The resource manager's API, used in-process by the gateway (and by `cornserve up`).
 * It owns the device inventory, keeps one task manager per distinct unit task, deploys transactionally
 * and tears down when the last user leaves.
 */
import type { UnitTask } from '../../functions/sdk/index.js';
import type { AutoscaleRecord, ExecutorRoute, UnitTaskRecord } from '../../lib/store.js';
import type { ProfileRunResult } from '../taskmanager/profiler-run.js';
import type { AutoscalePolicy, TaskCapacity, TaskProfile } from '../../lib/autoscale.js';

/** A task's autoscaling as `/tasks/list` shows it (absent when the platform runs without autoscaling). */
export interface AutoscaleStatus {
  /** undefined = manual (scaled by hand; `cornserve autoscale` turns it back on). */
  policy?: AutoscalePolicy;
  source: AutoscaleRecord['source'];
  /** Executors last decided. */
  desired: number;
  /** Offered load (req/s) at the last decision. */
  demandRps: number;
  /** Executor-side signals at the last tick (executors that report GET /load): requests waiting past their concurrency, */
  queueDepth?: number;
  /** and the fraction of time with ≥ 1 request served (mean over the task's executors). */
  busyFraction?: number;
  capacity?: TaskCapacity;
  lastDecision?: AutoscaleRecord['lastDecision'];
  coldStart?: AutoscaleRecord['coldStart'];
  /** Why decisions are paused (Store unreachable), when they are. */
  paused?: string;
}

export interface DeployProgress {
  task: string; // the unit task's name, e.g. "encoder-image-tiny-vlm-a"
  taskId: string;
  state: 'deploying' | 'ready' | 'shared' | 'failed';
  message?: string;
}

export interface TaskStatus extends UnitTaskRecord {
  name: string;
  executors: ExecutorRoute[];
  autoscale?: AutoscaleStatus;
  /** Nodes whose sidecar is down, where this task's executors (which move tensors) are not routed to meanwhile. */
  sidecarDown?: string[];
}

/** One task's share of a deployment plan (control/resources/plan-apply.ts maps a plan file's labels to these). */
export interface PlanTarget {
  taskId: string;
  /** The plan's field for this task, for errors (`components[1]`). */
  field: string;
  executors: number;
  devicesPerExecutor: number;
  /** Executors per node index (nodes in name order), checked to exist and fit; the allocation policy places them. */
  placement: Array<{ node: number; executors: number; field: string }>;
}

export interface ResourceManagerApi {
  /**
   * Declares the app's unit tasks used: new ones are deployed (devices allocated, executors started and
   * healthy), existing equivalent ones get usage + 1. All or nothing: on any failure every change is
   * rolled back and the error is thrown. Returns the task ids, in the order given.
   */
  deploy(tasks: UnitTask[], onProgress?: (p: DeployProgress) => void): Promise<string[]>;
  /** Usage - 1 for each; a task whose usage reaches 0 is drained and torn down. */
  release(taskIds: string[]): Promise<void>;
  /** Adds (delta > 0) or removes (delta < 0) devices; removal drains the executors it stops. */
  scale(taskId: string, deltaDevices: number): Promise<TaskStatus>;
  listTasks(): Promise<TaskStatus[]>;
  /** Profiles the task on one of its executors (throughput and latency at rising concurrency) and stores the profile. */
  profile(taskId: string): Promise<ProfileRunResult>;
  /** The stored profiles of this platform's device kind. */
  listProfiles(): Promise<TaskProfile[]>;
  /**
   * Sets a task's autoscaling policy. `source` 'admin' (POST /task/autoscale) always wins; 'app' (defineApp
   * autoscaling) applies unless an admin policy is set. 404 unknown task, 422 naming the field (min > max, max beyond
   * the pool), 409 AUTOSCALING_OFF without autoscaling.
   */
  setAutoscale(taskId: string, policy: AutoscalePolicy, source: 'admin' | 'app'): Promise<TaskStatus>;
  /**
   * Deploys a plan's executor counts: validated first as a whole (tasks running, devices per executor, the devices
   * fit, counts within each task's autoscaling min/max), then scale-downs, then scale-ups; a failure rolls back
   * what was done. 422 INVALID_PLAN naming the field. With autoscaling on, the counts become the desired counts
   * the autoscaler starts from (policies kept). Returns the tasks' status, in the order given.
   */
  applyPlan(targets: PlanTarget[]): Promise<TaskStatus[]>;
}
