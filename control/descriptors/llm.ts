/**
 * LLMTask / LLMEmbeddingTask (root LLMBaseTask) → an OpenAI-compatible `POST /v1/chat/completions`.
 *
 *  - `default`: our LLM executor (executors/llm). The request is the chat request with every `cornserve_*`
 *    field removed; with `receiveEmbeddings`, each multimodal part's URL becomes
 *    `data:{modality}/uuid;data_id=<forward id>;url=<original>,` (its embedding arrives through the sidecar).
 *    Without `receiveEmbeddings` (MLLMTask with `encoderFission: false`) the URLs pass unchanged and the executor
 *    is launched with `--encoders`: it runs the model's encoders itself (the monolithic baseline).
 *    LLMTask asks for `stream: true` and its SSE reply becomes NDJSON chunk lines; LLMEmbeddingTask adds
 *    `vllm_xargs` naming the hidden-state forward id and its destination ranks, and reads a JSON reply.
 *    LLMAnswerStatesTask adds `cornserve_hidden_states_forward_generated`: the executor generates (SSE) and streams
 *    each generated token's hidden state to the forward's ranks; the reply is answered at once (its SSE body is read
 *    in the background) so the consumer's stream — the graph's output — flows while the answer is generated.
 *  - `external`: an existing OpenAI-compatible server (vLLM, llama.cpp's server, …) given by URL. The task
 *    manager launches a thin adapter process (executors/llm/external-main.ts) that forwards to it, so routing,
 *    health and draining work as for any executor. Multimodal URLs are passed unchanged (the external engine
 *    encodes them itself); LLMEmbeddingTask is not supported. The URL comes from
 *    CORNSERVE_EXTERNAL_LLM_URLS (JSON `{modelId: url}`) or CORNSERVE_EXTERNAL_LLM_URL, read when launching.
 *  - `llama-cpp`: a GGUF file on llama.cpp (executors/llm/gguf): the model id names a `.gguf` file or a folder
 *    holding one. Text only (LLMTask); the binary follows the executor's devices (CUDA devices → the CUDA build).
 */
import { CornserveError } from '../../functions/sdk/errors.js';
import type { DataForward } from '../../functions/sdk/index.js';
import { LLMAnswerStatesTask, LLMEmbeddingTask, LLMTask, dtypeSuffix, type LLMBaseTask, type LLMEmbeddingOutput } from '../../functions/tasks/llm.js';
import { tpSuffix } from '../../functions/tasks/encoder.js';
import { modelBasename, multimodalParts, type ChatRequest, type ContentPart } from '../../lib/openai.js';
import { tensorParallelLaunch } from './tensor-parallel.js';
import type { InvocationResult, LaunchSpec, TaskDescriptor } from '../../lib/descriptor.js';

type LlmTask = LLMBaseTask<ChatRequest, unknown>;

export const EXTERNAL_LLM_URLS_ENV = 'CORNSERVE_EXTERNAL_LLM_URLS';
export const EXTERNAL_LLM_URL_ENV = 'CORNSERVE_EXTERNAL_LLM_URL';
export const EXTERNAL_LLM_API_KEY_ENV = 'CORNSERVE_EXTERNAL_LLM_API_KEY';

const invalid = (msg: string) => new CornserveError('LLM_DESCRIPTOR_INVALID_INPUT', msg, 400);

/** The URL of the multimodal part whose embedding travels under `dataId` (parsed by executors/llm/multimodal.ts). */
const dataUrl = (modality: string, dataId: string, url: string) => `data:${modality}/uuid;data_id=${dataId};url=${url},`;

/**
 * The request without `cornserve_*` fields, naming the task's model id (a client may have named an app), with
 * multimodal URLs mapped by `mapUrl(partIndex, modality, url)`.
 */
function chatBody(task: LlmTask, input: ChatRequest, mapUrl?: (part: number, modality: string, url: string) => string): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) if (!k.startsWith('cornserve_')) body[k] = v;
  body.model = task.config.modelId;
  if (!mapUrl) return body;
  let part = 0;
  const mapPart = (p: ContentPart): ContentPart => {
    if (p.type === 'image_url') return { ...p, image_url: { ...p.image_url, url: mapUrl(part++, 'image', p.image_url.url) } };
    if (p.type === 'video_url') return { ...p, video_url: { ...p.video_url, url: mapUrl(part++, 'video', p.video_url.url) } };
    if (p.type === 'audio_url') return { ...p, audio_url: { ...p.audio_url, url: mapUrl(part++, 'audio', p.audio_url.url) } };
    return p;
  };
  body.messages = input.messages.map((m) => (typeof m.content === 'string' ? m : { ...m, content: m.content.map(mapPart) }));
  return body;
}

/**
 * The `data:` payloads of an SSE body, stopping at `[DONE]`; other lines are skipped. A payload with an
 * `error` object (an OpenAI-style mid-stream error) ends the stream with that error.
 */
export async function* sseData(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buf = '';
  const payload = (line: string): string | undefined => {
    if (!line.startsWith('data:')) return undefined;
    return line.slice(5).trim();
  };
  for await (const piece of body) {
    buf += decoder.decode(piece, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const data = payload(buf.slice(0, nl).replace(/\r$/, ''));
      buf = buf.slice(nl + 1);
      if (data === undefined || data === '') continue;
      if (data === '[DONE]') return;
      const err = (JSON.parse(data) as { error?: { message?: string } }).error;
      if (err) throw new Error(`the LLM stream failed: ${err.message ?? JSON.stringify(err)}`);
      yield data;
    }
  }
}

async function drain(body: AsyncIterable<Uint8Array> | null): Promise<void> {
  try {
    for await (const _ of body ?? []) { /* discard */ }
  } catch {
    /* the graph was aborted: the connection is gone */
  }
}

const streamResult = (res: Response): InvocationResult => ({ output: {}, stream: sseData(res.body as unknown as AsyncIterable<Uint8Array>) });

function hiddenStateXargs(output: LLMEmbeddingOutput): Record<string, string> {
  const f = output.embeddings as DataForward;
  if (!f.dstSidecarRanks?.length) throw invalid('the LLM embedding output has no consumer (its DataForward has no destination ranks)');
  return { cornserve_hidden_states_forward_id: f.id, cornserve_hidden_states_forward_ranks: JSON.stringify(f.dstSidecarRanks) };
}

/** LLMBaseTask → our LLM executor. */
export const llmDescriptor: TaskDescriptor<LlmTask> = {
  name: 'default',
  taskClass: 'LLMBaseTask',
  executorName: (task) => `llm-${modelBasename(task.config.modelId)}${tpSuffix(task.config.tensorParallel)}${dtypeSuffix(task.config.dtype)}`,
  launch: (task): LaunchSpec => {
    const tp = tensorParallelLaunch(task.config.tensorParallel);
    return {
      kind: 'llm',
      movesTensors: true,
      entry: 'executors/llm/main.ts',
      image: 'cornserve/llm',
      args: [
        '--model-id', task.config.modelId, ...(task.config.receiveEmbeddings ? [] : ['--no-receive-embeddings', '--encoders']),
        ...tp.args, ...(task.config.dtype ? ['--dtype', task.config.dtype] : []),
      ],
      // tensorParallel colocated devices: the executor runs its decoder steps over as many ranks
      devicesPerExecutor: tp.devicesPerExecutor,
    };
  },
  request: (task, input, output) => {
    const req = input as ChatRequest;
    let mapUrl: ((part: number, modality: string, url: string) => string) | undefined;
    if (task.config.receiveEmbeddings) {
      const parts = multimodalParts(req);
      const forwards = req.cornserve_embeddings ?? [];
      if (parts.length !== forwards.length) {
        throw invalid(`${parts.length} multimodal parts but ${forwards.length} embeddings (cornserve_embeddings must hold one per part, in message order)`);
      }
      mapUrl = (i, modality, url) => dataUrl(modality, forwards[i]!.id, url);
    } else if (req.cornserve_embeddings?.length) {
      throw invalid('this LLM task encodes media itself (receiveEmbeddings: false): cornserve_embeddings must be empty');
    }
    const body = chatBody(task, req, mapUrl);
    if (task instanceof LLMAnswerStatesTask) {
      return {
        path: '/v1/chat/completions',
        body: { ...body, stream: true, vllm_xargs: { ...hiddenStateXargs(output as LLMEmbeddingOutput), cornserve_hidden_states_forward_generated: 'true' } },
      };
    }
    if (task instanceof LLMEmbeddingTask) return { path: '/v1/chat/completions', body: { ...body, stream: false, vllm_xargs: hiddenStateXargs(output as LLMEmbeddingOutput) } };
    if (task instanceof LLMTask) return { path: '/v1/chat/completions', body: { ...body, stream: true } };
    throw new Error(`the llm descriptor cannot serve ${task.constructor.name}`);
  },
  response: async (task, output, res) => {
    if (task instanceof LLMTask) return streamResult(res);
    if (task instanceof LLMAnswerStatesTask) {
      // Only a graph's last invocation may stream, and the consumer of these states needs to stream while they are
      // generated: done now; the text (unused) is read to its end in the background. A failure mid-answer reaches
      // the consumer as the producer's failure on the sidecar stream; an aborted graph closes this connection.
      void drain(res.body as unknown as AsyncIterable<Uint8Array> | null);
      return { output };
    }
    await res.json(); // the completion; the hidden states went through the sidecar
    return { output };
  },
};

/** The external server's URL for a model id, from the environment (read when the adapter is launched). */
export function externalLlmUrl(modelId: string, env: NodeJS.ProcessEnv = process.env): string {
  const map = env[EXTERNAL_LLM_URLS_ENV];
  if (map) {
    let urls: Record<string, string>;
    try {
      urls = JSON.parse(map) as Record<string, string>;
    } catch {
      throw invalid(`${EXTERNAL_LLM_URLS_ENV} must be a JSON object {modelId: url}`);
    }
    if (typeof urls[modelId] === 'string') return urls[modelId];
  }
  const one = env[EXTERNAL_LLM_URL_ENV];
  if (one) return one;
  throw invalid(`no external LLM server is configured for ${modelId}: set ${EXTERNAL_LLM_URLS_ENV}='{"${modelId}": "http://host:port"}' or ${EXTERNAL_LLM_URL_ENV}`);
}

/** LLMTask → an existing OpenAI-compatible server, through the adapter executor. */
export const externalLlmDescriptor: TaskDescriptor<LlmTask> = {
  name: 'external',
  taskClass: 'LLMBaseTask',
  executorName: (task) => `llm-external-${modelBasename(task.config.modelId)}`,
  launch: (task): LaunchSpec => {
    const key = process.env[EXTERNAL_LLM_API_KEY_ENV];
    return {
      kind: 'llm-external',
      entry: 'executors/llm/external-main.ts',
      image: 'cornserve/llm',
      args: ['--upstream', externalLlmUrl(task.config.modelId)],
      ...(key ? { env: { [EXTERNAL_LLM_API_KEY_ENV]: key } } : {}),
      devicesPerExecutor: 1,
    };
  },
  request: (task, input) => {
    if (!(task instanceof LLMTask)) throw invalid(`the external LLM descriptor serves LLMTask only (an external engine cannot forward hidden states), not ${task.constructor.name}`);
    if ((input as ChatRequest).cornserve_embeddings?.length) {
      throw invalid('an external LLM engine cannot receive embeddings from encoders: declare the MLLM with encoderFission: false');
    }
    return { path: '/v1/chat/completions', body: { ...chatBody(task, input as ChatRequest), stream: true } };
  },
  response: async (_task, _output, res) => streamResult(res),
};

/** LLMTask → a GGUF file on llama.cpp (executors/llm/gguf/main.ts). */
export const llamaCppDescriptor: TaskDescriptor<LlmTask> = {
  name: 'llama-cpp',
  taskClass: 'LLMBaseTask',
  executorName: (task) => `llm-gguf-${modelBasename(task.config.modelId).replace(/-gguf$/, '')}`,
  launch: (task): LaunchSpec => ({
    kind: 'llm-gguf',
    entry: 'executors/llm/gguf/main.ts',
    image: 'cornserve/llm',
    args: ['--model-id', task.config.modelId, ...(task.config.memoryMiB ? ['--memory-mb', String(task.config.memoryMiB)] : [])],
    devicesPerExecutor: 1,
  }),
  request: (task, input) => {
    if (!(task instanceof LLMTask)) throw invalid(`the llama-cpp descriptor serves LLMTask only (llama.cpp here cannot forward hidden states), not ${task.constructor.name}`);
    if ((input as ChatRequest).cornserve_embeddings?.length) {
      throw invalid('a GGUF model on llama.cpp takes text only: it cannot receive embeddings from encoders');
    }
    return { path: '/v1/chat/completions', body: { ...chatBody(task, input as ChatRequest), stream: true } };
  },
  response: async (_task, _output, res) => streamResult(res),
};

export const llmDescriptors = [llmDescriptor, externalLlmDescriptor, llamaCppDescriptor];
