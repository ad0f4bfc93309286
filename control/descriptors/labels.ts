/**
 * The readable label of a unit task (`encoder:image`, `llm:cornserve/tiny-vlm-a`, `echo:echo-20ms-x2`): the name
 * plans and simulator scenarios use for it. One definition, so a plan the simulator wrote names the same tasks
 * the live platform runs (apply-plan maps labels back to deployed task ids).
 */
import { descriptorFor } from './registry.js';
import type { UnitTask } from '../../functions/sdk/index.js';

/** The kinds of stage a unit task runs as (the simulator keeps one latency model per kind, sim/latency/models.ts). */
export type StageKind = 'encoder' | 'llm' | 'generator' | 'echo';

/** Root unit-task class → the stage whose latency model runs it. */
export const STAGE_OF: Readonly<Record<string, StageKind>> = {
  EncoderTask: 'encoder',
  LLMBaseTask: 'llm',
  EchoBaseTask: 'echo',
  LLMTask: 'llm',
  LLMEmbeddingTask: 'llm',
  LLMAnswerStatesTask: 'llm',
  ImageGeneratorTask: 'generator',
  AudioGeneratorTask: 'generator',
  EchoTask: 'echo',
  EchoStreamTask: 'echo',
};

export function taskLabel(task: UnitTask, stage: StageKind): string {
  const c = task.config as Record<string, unknown>;
  const detail = stage === 'encoder' ? c.modality : stage === 'echo' ? descriptorFor(task).executorName(task) : (c.modelId ?? c.modelIds);
  return `${stage}:${String(detail)}`;
}
