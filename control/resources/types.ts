/**
 * The resource manager's API, used in-process by the gateway (and by `cornserve up`).
 * It owns the device inventory, keeps one task manager per distinct unit task, deploys transactionally
 * and tears down when the last user leaves.
 */
import type { UnitTask } from '../../functions/sdk/index.js';
import type { AutoscaleRecord, ExecutorRoute, UnitTaskRecord } from '../store/types.js';
import type { ProfileRunResult } from '../taskmanager/profiler-run.js';
import type { AutoscalePolicy, TaskCapacity, TaskProfile } from '../autoscaler/types.js';

/** A task's autoscaling as `/tasks/list` shows it (absent when the platform runs without autoscaling). */
export interface AutoscaleStatus {
  /** undefined = manual (scaled by hand; `cornserve autoscale` turns it back on). */
  policy?: AutoscalePolicy;
  source: AutoscaleRecord['source'];
  /** Executors last decided. */
  desired: number;
  /** Offered load (req/s) at the last decision. */
  demandRps: number;
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
}
