/**
 * EncoderTask → Eric (the reference's EricDescriptor).
 *  - executor `eric-{modality}-{first model basename}[-tpN]`, `config.tensorParallel` colocated devices (default 1):
 *    Eric runs one worker per device (its sidecar ranks, CORNSERVE_SIDECAR_RANKS) and shards the vision body,
 *    `executors/eric/main.ts --model-id <first sorted id> --modality M --max-batch-size B
 *    [--adapter-model-ids <the other ids>]` (port, ranks and sidecar come from the platform's environment);
 *  - request: POST /embeddings `{data: [{id, modality, model_id, url, receiver_sidecar_ranks}]}`, one item per
 *    data URL, paired with the output's embeddings (forward id, destination rank groups);
 *  - response `{status: 0}` → the output unchanged (the embeddings went to the receivers' sidecars); any
 *    other status is an error.
 *  - input `return_embeddings: true`: items without receivers and `return_embeddings: true`; Eric's
 *    `embeddings: [{id, shape, data}]` become the output's `values` (JSON to the app, nothing forwarded).
 */
import { CornserveError } from '../../functions/sdk/errors.js';
import { type EncoderInput, type EncoderOutput, type EncoderTask, tpSuffix } from '../../functions/tasks/encoder.js';
import { modelBasename } from '../../lib/openai.js';
import { tensorParallelLaunch } from './tensor-parallel.js';
import type { TaskDescriptor } from '../../lib/descriptor.js';

export const ericDescriptor: TaskDescriptor<EncoderTask> = {
  name: 'default',
  taskClass: 'EncoderTask',
  executorName: (task) => `eric-${task.config.modality}-${modelBasename(task.config.modelIds[0]!)}${tpSuffix(task.config.tensorParallel)}`,
  launch: (task) => {
    const [first, ...adapters] = task.config.modelIds; // sorted and unique (the task's config schema)
    const tp = tensorParallelLaunch(task.config.tensorParallel);
    return {
      kind: 'eric',
      movesTensors: true,
      entry: 'executors/eric/main.ts',
      image: 'cornserve/eric',
      args: [
        '--model-id', first!, '--modality', task.config.modality, '--max-batch-size', String(task.config.maxBatchSize),
        ...(adapters.length ? ['--adapter-model-ids', adapters.join(',')] : []),
        ...tp.args,
      ],
      devicesPerExecutor: tp.devicesPerExecutor,
    };
  },
  request: (task, input, output) => {
    const { model_id, data_urls, return_embeddings } = input as EncoderInput;
    if (return_embeddings) {
      const data = data_urls.map((url, i) => ({ id: `${task.id}-${i}`, modality: task.config.modality, model_id, url, receiver_sidecar_ranks: null }));
      return { path: '/embeddings', body: { data, return_embeddings: true } };
    }
    const { embeddings } = output as EncoderOutput;
    if (embeddings.length !== data_urls.length) {
      throw new CornserveError('DESCRIPTOR_MISMATCH', `${data_urls.length} data URLs but ${embeddings.length} embeddings`, 500);
    }
    const data = data_urls.map((url, i) => {
      const forward = embeddings[i]!;
      if (!forward.dstSidecarRanks) {
        throw new CornserveError('DESCRIPTOR_MISMATCH', `embedding ${forward.id} has no destination sidecar ranks (was the graph wired?)`, 500);
      }
      return { id: forward.id, modality: task.config.modality, model_id, url, receiver_sidecar_ranks: forward.dstSidecarRanks };
    });
    return { path: '/embeddings', body: { data } };
  },
  response: async (_task, output, res) => {
    const body = (await res.json()) as { status?: unknown; error_message?: unknown; embeddings?: { shape: [number, number]; data: number[] }[] };
    if (body.status !== 0) {
      throw new CornserveError('EXECUTOR_FAILED', `eric answered status ${String(body.status)}: ${String(body.error_message ?? 'no message')}`, 502);
    }
    const out = output as EncoderOutput;
    if (!out.values) return { output };
    if (body.embeddings?.length !== out.values.length) {
      throw new CornserveError('EXECUTOR_FAILED', `eric answered ${body.embeddings?.length ?? 'no'} embeddings for ${out.values.length} URLs`, 502);
    }
    return { output: { ...out, values: body.embeddings.map((e) => ({ shape: e.shape, data: e.data })) } };
  },
};
