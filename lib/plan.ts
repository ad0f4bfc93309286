/**
 * A deployment plan (the file `cornserve plan` writes and `cornserve apply-plan` reads): executors per task
 * label, devices per executor, colocation mode, and placement on nodes. Checked with zod at the edge.
 */
import { z } from 'zod';

export const planSchema = z.object({
  version: z.literal(1),
  app: z.string().min(1),
  device: z.string().min(1),
  cluster: z.object({ nodes: z.number().int().positive(), devicesPerNode: z.number().int().positive() }).strict(),
  /** split: every task on its own executors; mixed: some encoders (replicas 0) run inside their LLM/generator;
   *  monolithic: every replica holds every component, encoders inside (encoderFission: false). */
  mode: z.enum(['split', 'mixed', 'monolithic']),
  components: z.array(z.object({
    label: z.string().min(1),
    stage: z.enum(['encoder', 'llm', 'generator', 'echo']),
    replicas: z.number().int().nonnegative(),
    devicesPerExecutor: z.number().int().positive(),
  }).strict()).min(1),
  /** Executors per node and label (a consumer and its producers share a node where they fit: sidecar links). */
  placement: z.array(z.object({ node: z.number().int().nonnegative(), label: z.string().min(1), executors: z.number().int().positive() }).strict()),
  explanation: z.object({
    /** Highest rate the analytic screen allows (req/s) and the simulated goodput, if simulated. */
    screenRateRps: z.number().nonnegative(),
    goodputRps: z.number().nonnegative().nullable(),
    bottleneck: z.string(),
    /** Capacity ÷ demand per label at the plan's goodput (or screen rate). */
    headroom: z.record(z.string(), z.number()),
  }).strict(),
}).strict();

export type Plan = z.infer<typeof planSchema>;

export class PlanError extends Error {
  override readonly name = 'PlanError';
}

export function parsePlan(raw: unknown, where = 'plan'): Plan {
  const r = planSchema.safeParse(raw);
  if (!r.success) throw new PlanError(`${where}: ${r.error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; ')}`);
  const labels = new Set<string>();
  for (const c of r.data.components) {
    if (labels.has(c.label)) throw new PlanError(`${where}: components: '${c.label}' is given twice`);
    labels.add(c.label);
  }
  for (const p of r.data.placement) if (!labels.has(p.label)) throw new PlanError(`${where}: placement: '${p.label}' is not a component`);
  return r.data;
}
