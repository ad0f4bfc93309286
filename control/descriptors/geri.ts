/**
 * ImageGeneratorTask / AudioGeneratorTask → Geri (the reference's ImageGeriDescriptor / AudioGeriDescriptor).
 *  - executor `geri-{modality}-{model basename}`, one device, `executors/geri/main.ts --model-id --modality
 *    --max-batch-size` (port, ranks and sidecar come from the platform's environment);
 *  - request: POST /{modality}/generate with the wired input's embeddings id (`embedding_data_id`);
 *  - image response `{status: 0, generated}` → the output; audio response: Geri's SSE of base64 PCM16 chunks,
 *    each re-wrapped as the reference does into an OpenAI chat chunk with the audio in
 *    `choices[0].delta.audio.data`, one NDJSON line each. A stream that reports an error, or ends without
 *    Geri's `done` event (the executor died mid-stream), fails the invocation.
 */
import { CornserveError } from '../../functions/sdk/errors.js';
import type { DataForward } from '../../functions/sdk/index.js';
import { AudioGeneratorTask, type AudioGeneratorInput, ImageGeneratorTask, type ImageGeneratorInput } from '../../functions/tasks/generator.js';
import { type ChatChunk, modelBasename } from '../../lib/openai.js';
import type { LaunchSpec, TaskDescriptor } from '../../lib/descriptor.js';

type GeneratorTask = ImageGeneratorTask | AudioGeneratorTask;

/** One server-sent event: its `event:` name ('message' when absent) and its `data:` lines joined. */
export interface SseEvent { event: string; data: string }

/** Parses a text/event-stream body into events (comments skipped; LF or CRLF line ends). */
export async function* sseEvents(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buf = '';
  let event: string | undefined;
  let data: string[] = [];
  const line = function* (l: string): Generator<SseEvent> {
    if (l === '') {
      if (data.length || event) yield { event: event ?? 'message', data: data.join('\n') };
      event = undefined;
      data = [];
    } else if (!l.startsWith(':')) {
      const colon = l.indexOf(':');
      const field = colon < 0 ? l : l.slice(0, colon);
      const value = colon < 0 ? '' : l.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
  };
  for await (const part of body) {
    buf += typeof part === 'string' ? part : decoder.decode(part, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const l = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      yield* line(l);
    }
  }
  buf += decoder.decode();
  if (buf) yield* line(buf.replace(/\r$/, ''));
  yield* line('');
}

/** A Geri failure reported inside its audio stream (after the 200), with Geri's code. */
export class GeriStreamError extends CornserveError {}

/** The reference's re-wrapping of one audio chunk. */
export function audioChunk(base64Pcm16: string, created = Math.floor(Date.now() / 1000)): ChatChunk {
  return { id: '0', object: 'chat.completion.chunk', created, model: '', choices: [{ index: 0, delta: { audio: { data: base64Pcm16 } } }] };
}

/** Geri's audio SSE → NDJSON lines of chat chunks; throws on an error event or a stream cut before `done`. */
export async function* audioChunkLines(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  for await (const ev of sseEvents(body)) {
    if (ev.event === 'done') return;
    if (ev.event === 'error') {
      let err: { code?: string; message?: string } = {};
      try {
        err = (JSON.parse(ev.data) as { error?: typeof err }).error ?? {};
      } catch {
        /* not JSON: use the text */
      }
      throw new GeriStreamError(err.code ?? 'GERI_STREAM_ERROR', `geri: ${err.message ?? ev.data}`, 502);
    }
    if (ev.event !== 'message') continue;
    const b64 = JSON.parse(ev.data) as unknown;
    if (typeof b64 !== 'string') throw new GeriStreamError('GERI_STREAM_ERROR', `geri sent an audio chunk that is not a base64 string: ${ev.data.slice(0, 80)}`, 502);
    yield JSON.stringify(audioChunk(b64));
  }
  throw new GeriStreamError('GERI_STREAM_ERROR', 'geri\'s audio stream ended before its done event (the executor stopped mid-stream)', 502);
}

const modalityOf = (task: GeneratorTask) => (task instanceof AudioGeneratorTask ? 'audio' : 'image');

function launch(task: GeneratorTask): LaunchSpec {
  return {
    kind: 'geri',
    movesTensors: true,
    entry: 'executors/geri/main.ts',
    image: 'cornserve/geri',
    args: ['--model-id', task.config.modelId, '--modality', modalityOf(task), '--max-batch-size', String(task.config.maxBatchSize)],
    devicesPerExecutor: 1,
  };
}

/** What both descriptors share: the name, the executor name and the launch spec. */
const base = {
  name: 'default',
  executorName: (task: GeneratorTask) => `geri-${modalityOf(task)}-${modelBasename(task.config.modelId)}`,
  launch,
} as const;

export const imageGeriDescriptor: TaskDescriptor<ImageGeneratorTask> = {
  ...base,
  taskClass: 'ImageGeneratorTask',
  request: (_task, input) => {
    const i = input as ImageGeneratorInput & { embeddings: DataForward };
    return {
      path: '/image/generate',
      body: { embedding_data_id: i.embeddings.id, height: i.height, width: i.width, num_inference_steps: i.num_inference_steps, skip_tokens: i.skip_tokens },
    };
  },
  response: async (_task, _output, res) => {
    const body = (await res.json()) as { status?: unknown; generated?: unknown; error_message?: unknown };
    if (body.status !== 0 || typeof body.generated !== 'string') {
      throw new GeriStreamError('GERI_BAD_REPLY', `geri answered status ${String(body.status)} without an image${body.error_message ? `: ${String(body.error_message)}` : ''}`, 502);
    }
    return { output: { generated: body.generated } };
  },
};

export const audioGeriDescriptor: TaskDescriptor<AudioGeneratorTask> = {
  ...base,
  taskClass: 'AudioGeneratorTask',
  request: (_task, input) => {
    const i = input as AudioGeneratorInput & { embeddings: DataForward };
    return { path: '/audio/generate', body: { embedding_data_id: i.embeddings.id, chunk_size: i.chunk_size, left_context_size: i.left_context_size } };
  },
  response: async (_task, _output, res) => ({ output: {}, stream: audioChunkLines(res.body as unknown as AsyncIterable<Uint8Array>) }),
};

export const geriDescriptors = [imageGeriDescriptor, audioGeriDescriptor] as const;
