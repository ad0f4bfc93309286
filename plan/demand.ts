/**
 * Demand per stage: device-milliseconds each task label spends on an average request of the mix, from the
 * latency models (the same ones the simulator runs) and the app's recorded graphs. Also each request kind's
 * floor: its latency on an idle system, which no plan can beat (the infeasibility check). Pure.
 */
import { decodeMs, encoderMs, generatorMs, llmTokensOf, prefillMs, type StageKind, type StageModels } from '../sim/latency/models.js';
import type { SimGraph, SimTask } from '../sim/apps/record.js';
import { modelsAtTp } from '../sim/latency/tensor-parallel.js';
import { unitsOf } from '../sim/run.js';
import type { RequestKind, RequestSpec } from '../bench/workload/mix.js';

export interface StageDemand {
  label: string;
  stage: StageKind;
  devicesPerExecutor: number;
  /** Device-ms per average request (batching amortised at the model's batch limits). */
  workMs: number;
  /** Monolithic: the LLM (or generator) label that runs this encoder inside its own engine. */
  hostLabel?: string;
}

export interface KindFloor {
  kind: RequestKind;
  weight: number;
  /** Idle-system latency: TTFT, time per output token, end to end; and the label that contributes most to each. */
  ttftMs: number;
  tpotMs: number;
  e2elMs: number;
  ttftStage: string;
  e2elStage: string;
  tpotStage: string;
}

export interface Demand { stages: StageDemand[]; floors: KindFloor[] }

/** Throughput cost (amortised) and idle latency of one invocation. */
function invocationCost(stage: StageKind, models: StageModels, units: number, prompt: number, out: number, config: Readonly<Record<string, unknown>> = {}): { work: number; idle: number; ttft: number; tpot: number } {
  switch (stage) {
    case 'encoder': {
      const m = models.encoder!;
      const idle = encoderMs(m, units);
      return { work: m.a / (m.maxBatchSize ?? 1) + m.b * units + (m.c ?? 0) * units * units, idle, ttft: idle, tpot: 0 };
    }
    case 'llm': {
      const m = models.llm!;
      const prefill = prefillMs(m, prompt, prompt * prompt);
      const prefillBatch = Math.max(1, Math.floor(m.maxPrefillTokens / Math.max(prompt, 1)));
      const decodeBatch = Math.max(1, Math.min(m.maxBatch, Math.floor(m.kvTokens / Math.max(prompt + out, 1))));
      const ctx = prompt + out / 2;
      const stepIdle = decodeMs(m, prompt + 1, 1);
      const stepBatched = decodeMs(m, ctx * decodeBatch, decodeBatch) / decodeBatch;
      const work = (prefill - m.prefill.a) + m.prefill.a / prefillBatch + Math.max(out - 1, 0) * stepBatched;
      return { work, idle: prefill + Math.max(out - 1, 0) * stepIdle, ttft: prefill, tpot: out > 1 ? stepIdle : 0 };
    }
    case 'generator': {
      const m = models.generator!;
      const idle = generatorMs(m, 1);
      return { work: m.steps * (m.perStep.a / (m.maxBatchSize ?? 1) + m.perStep.b), idle, ttft: idle, tpot: 0 };
    }
    case 'echo': {
      // As sim/executors/echo.ts: the task's own service time on top of the preset's, maxConcurrency at once.
      const ms = (typeof config.serviceTimeMs === 'number' ? config.serviceTimeMs : 0) + models.echo!.a;
      const parallel = typeof config.maxConcurrency === 'number' ? config.maxConcurrency : Infinity;
      return { work: ms / parallel, idle: ms, ttft: ms, tpot: 0 };
    }
  }
}

/** Demand of `specs` (a sample of the mix) on the app whose graphs per kind are `byKind`. */
/** `tp`: tensor-parallel degree per label (× its task's devices; sim/latency/tensor-parallel.ts scales its latency). */
/** `modelsOf`: an executor's models at degree k (with device memory on, its KV cache too: sim/run.ts executorModelsFor). */
export function demandOf(byKind: ReadonlyMap<RequestKind, readonly SimGraph[]>, specs: readonly RequestSpec[], models: StageModels, tp: Readonly<Record<string, number>> = {}, modelsOf: (t: SimTask, k: number) => StageModels = (t, k) => modelsAtTp(models, t.stage, k)): Demand {
  const stages = new Map<string, StageDemand>();
  const floors = new Map<RequestKind, KindFloor & { n: number }>();
  for (const spec of specs) {
    const units = unitsOf(spec, models);
    const f = floors.get(spec.kind) ?? { kind: spec.kind, weight: 0, ttftMs: 0, tpotMs: 0, e2elMs: 0, ttftStage: '', e2elStage: '', tpotStage: '', n: 0 };
    f.n++;
    for (const g of byKind.get(spec.kind) ?? []) {
      // Idle latency along the graph: an invocation starts when its producers are done.
      const finish: number[] = [];
      const firstToken: number[] = [];
      const heaviest: Array<{ e2el: [number, string]; ttft: [number, string] }> = [];
      g.invocations.forEach((inv, i) => {
        const t = inv.task;
        const encUnits = inv.producers.reduce((a, p) => a + (g.invocations[p]!.task.stage === 'encoder' ? units : 0), 0);
        const k = tp[t.label] ?? 1;
        const c = invocationCost(t.stage, modelsOf(t, k), units, spec.inputTokens + llmTokensOf(models.encoder, encUnits), spec.outputTokens, t.config);
        const s = stages.get(t.label) ?? { label: t.label, stage: t.stage, devicesPerExecutor: t.devicesPerExecutor * k, workMs: 0 };
        s.workMs += c.work * s.devicesPerExecutor;
        if (t.stage === 'encoder') {
          const host = g.invocations.find((x) => (x.task.stage === 'llm' || x.task.stage === 'generator') && x.producers.includes(i));
          if (host) s.hostLabel = host.task.label;
        }
        stages.set(t.label, s);
        const start = Math.max(0, ...inv.producers.map((p) => finish[p]!));
        finish[i] = start + c.idle;
        firstToken[i] = start + c.ttft;
        const from = inv.producers.map((p) => heaviest[p]!);
        const worst = (pick: (h: { e2el: [number, string]; ttft: [number, string] }) => [number, string], own: number): [number, string] =>
          from.map(pick).reduce((a, b) => (b[0] > a[0] ? b : a), [own, t.label] as [number, string]);
        heaviest[i] = { e2el: worst((h) => h.e2el, c.idle), ttft: worst((h) => h.ttft, c.ttft) };
        if (c.tpot > f.tpotMs) { f.tpotMs = Math.max(f.tpotMs, c.tpot); f.tpotStage = t.label; }
      });
      const last = finish.reduce((a, v, i) => (v > finish[a]! ? i : a), 0);
      // TTFT is the first token of the streaming (last) LLM, else the end of the graph.
      const ttft = firstToken[last]!;
      f.e2elMs = Math.max(f.e2elMs, finish[last]!);
      if (ttft >= f.ttftMs) { f.ttftMs = ttft; f.ttftStage = heaviest[last]!.ttft[1]; }
      f.e2elStage = heaviest[last]!.e2el[1];
    }
    floors.set(spec.kind, f);
  }
  for (const s of stages.values()) s.workMs /= Math.max(specs.length, 1);
  return {
    stages: [...stages.values()],
    floors: [...floors.values()].map(({ n, ...f }) => ({ ...f, weight: n / Math.max(specs.length, 1) })),
  };
}
