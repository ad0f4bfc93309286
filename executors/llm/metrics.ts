/** Prometheus metrics of one LLM executor (own registry, so tests can run several servers in one process). */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineStats } from './engine.js';

const LATENCY = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export function createLlmMetrics(stats: () => EngineStats, labels: Record<string, string> = {}) {
  const registry = new Registry();
  registry.setDefaultLabels(labels);
  const registers = [registry];
  const gauge = (name: string, help: string, pick: (s: EngineStats) => number) =>
    new Gauge({ name, help, registers, collect() { this.set(pick(stats())); } });
  gauge('cornserve_llm_running_requests', 'Sequences in the running batch (= KV cache slots in use)', (s) => s.running);
  gauge('cornserve_llm_waiting_requests', 'Requests waiting to be admitted', (s) => s.waiting);
  gauge('cornserve_llm_kv_cache_bytes', 'Bytes held by the KV cache buffers', (s) => s.kvBytes);
  gauge('cornserve_llm_kv_cache_capacity_positions', 'Positions per KV cache slot', (s) => s.kvCapacity);
  return {
    registry,
    requests: new Counter({ name: 'cornserve_llm_requests_total', help: 'Chat requests by outcome (ok, error code)', labelNames: ['outcome'], registers }),
    promptTokens: new Counter({ name: 'cornserve_llm_prompt_tokens_total', help: 'Prompt tokens prefilled', registers }),
    generationTokens: new Counter({ name: 'cornserve_llm_generation_tokens_total', help: 'Tokens generated', registers }),
    ttft: new Histogram({ name: 'cornserve_llm_time_to_first_token_seconds', help: 'Request received → first token', buckets: LATENCY, registers }),
    duration: new Histogram({ name: 'cornserve_llm_request_duration_seconds', help: 'Request received → last byte', buckets: LATENCY, registers }),
    batchSize: new Histogram({ name: 'cornserve_llm_batch_size', help: 'Sequences per decoder call', labelNames: ['kind'], buckets: [1, 2, 4, 8, 16, 32, 64, 128], registers }),
    stepSeconds: new Histogram({ name: 'cornserve_llm_step_duration_seconds', help: 'Decoder call time', labelNames: ['kind'], buckets: LATENCY, registers }),
  };
}

export type LlmMetrics = ReturnType<typeof createLlmMetrics>;
