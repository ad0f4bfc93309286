/**
 * OpenAI chat shapes: the LLM tasks' input (a chat request) and output (a stream of chat chunks).
 * Unknown fields are kept (passthrough) so requests built for OpenAI's API work unchanged.
 */
import { z } from 'zod';
import { tensorForward } from '../functions/sdk/index.js';

export const textPartSchema = z.object({ type: z.literal('text'), text: z.string() });
const urlSchema = z.object({ url: z.string().min(1) });
export const imagePartSchema = z.object({ type: z.literal('image_url'), image_url: urlSchema });
export const videoPartSchema = z.object({ type: z.literal('video_url'), video_url: urlSchema });
export const audioPartSchema = z.object({ type: z.literal('audio_url'), audio_url: urlSchema });
export const contentPartSchema = z.discriminatedUnion('type', [textPartSchema, imagePartSchema, videoPartSchema, audioPartSchema]);
export type ContentPart = z.infer<typeof contentPartSchema>;

export const chatMessageSchema = z.looseObject({
  role: z.enum(['system', 'user', 'assistant', 'developer', 'tool']),
  content: z.union([z.string(), z.array(contentPartSchema)]),
  name: z.string().optional(),
});
export type ChatMessage = z.infer<typeof chatMessageSchema>;

export const chatRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(chatMessageSchema).min(1, 'at least one message'),
  max_tokens: z.number().int().positive().optional(),
  max_completion_tokens: z.number().int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  seed: z.number().int().optional(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).optional(),
  stream: z.boolean().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).optional(),
  frequency_penalty: z.number().min(-2).max(2).optional(),
  presence_penalty: z.number().min(-2).max(2).optional(),
  ignore_eos: z.boolean().optional(),
  /** Embeddings for the multimodal parts, in message order (set by MLLMTask; never by clients). */
  cornserve_embeddings: z.array(tensorForward()).default([]),
});
export type ChatRequest = z.infer<typeof chatRequestSchema>;
export type ChatRequestInput = z.input<typeof chatRequestSchema>;

export const usageSchema = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});

export const chatChunkSchema = z.looseObject({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.number(),
  model: z.string(),
  choices: z.array(
    z.looseObject({
      index: z.number().int(),
      delta: z.looseObject({
        role: z.string().optional(),
        content: z.string().nullable().optional(),
        audio: z.object({ data: z.string() }).optional(),
      }),
      finish_reason: z.string().nullable().optional(),
    }),
  ),
  usage: usageSchema.nullable().optional(),
});
export type ChatChunk = z.infer<typeof chatChunkSchema>;

export type Modality = 'image' | 'video' | 'audio';
export const MODALITIES = ['image', 'video', 'audio'] as const satisfies readonly Modality[];

/** The multimodal parts of a chat request, in message order. */
export function multimodalParts(req: Pick<ChatRequest, 'messages'>): Array<{ modality: Modality; url: string }> {
  const out: Array<{ modality: Modality; url: string }> = [];
  for (const m of req.messages) {
    if (typeof m.content === 'string') continue;
    for (const p of m.content) {
      if (p.type === 'image_url') out.push({ modality: 'image', url: p.image_url.url });
      else if (p.type === 'video_url') out.push({ modality: 'video', url: p.video_url.url });
      else if (p.type === 'audio_url') out.push({ modality: 'audio', url: p.audio_url.url });
    }
  }
  return out;
}

/** `a/b/Name` -> `name`: the readable tail of a model id, for task and executor names. */
export function modelBasename(modelId: string): string {
  return (modelId.split('/').pop() ?? modelId).toLowerCase().replace(/[^a-z0-9-]+/g, '-');
}
