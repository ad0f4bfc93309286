/**
 * A GGUF model's chat prompt: its own `tokenizer.chat_template` (Jinja, as llama.cpp's converter copies it from
 * the Hugging Face tokenizer) rendered with `add_generation_prompt`, then tokenized by llama.cpp with special
 * tokens parsed. Text only: llama.cpp through node-llama-cpp takes token ids, never input embeddings.
 */
import { Template } from '@huggingface/jinja';
import type { LlamaModel } from 'node-llama-cpp';
import type { ChatMessage } from '../../../lib/openai.js';
import { llmErrors } from '../errors.js';

export class GgufChat {
  private readonly template: Template | undefined;
  private readonly specials: Record<string, string>;

  constructor(private readonly model: LlamaModel) {
    const source = model.fileInfo.metadata.tokenizer?.chat_template;
    try {
      this.template = typeof source === 'string' ? new Template(source) : undefined;
    } catch (e) {
      throw llmErrors.modelInvalid(`tokenizer.chat_template does not parse: ${(e as Error).message}`);
    }
    this.specials = { bos_token: model.tokens.bosString ?? '', eos_token: model.tokens.eosString ?? '' };
  }

  /** The chat as prompt token ids; a media part is LLM_MULTIMODAL_UNSUPPORTED naming it. */
  prompt(messages: readonly ChatMessage[]): number[] {
    if (!this.template) throw llmErrors.badRequest('this GGUF file has no tokenizer.chat_template', 'messages');
    const msgs = messages.map((m, i) => {
      if (typeof m.content === 'string') return { role: m.role, content: m.content };
      const media = m.content.findIndex((p) => p.type !== 'text');
      if (media >= 0) {
        throw llmErrors.multimodalUnsupported(`messages.${i}.content.${media}: a GGUF model on llama.cpp takes text only (${m.content[media]!.type} given)`, `messages.${i}.content`);
      }
      return { role: m.role, content: m.content.map((p) => (p.type === 'text' ? p.text : '')).join('') };
    });
    let text: string;
    try {
      text = this.template.render({ messages: msgs, add_generation_prompt: true, ...this.specials });
    } catch (e) {
      throw llmErrors.badRequest(`chat_template: ${(e as Error).message}`, 'messages');
    }
    return [...this.model.tokenize(text, true)];
  }
}
