/** Small builders shared by the SDK and built-in task tests: chat requests with media parts, echo composites. */
import { CompositeTask, type Task, type TaskGraphJSON } from '../../../functions/sdk/index.js';
import { EchoTask, type ChatRequestInput, type ContentPart, type EchoInput } from '../../../functions/tasks/index.js';
import { FakeDispatcher } from '../../helpers/fake-dispatcher.js';

export const MODEL = 'org/tiny-vlm';

export const text = (t: string): ContentPart => ({ type: 'text', text: t });
export const image = (url: string): ContentPart => ({ type: 'image_url', image_url: { url } });
export const video = (url: string): ContentPart => ({ type: 'video_url', video_url: { url } });
export const audio = (url: string): ContentPart => ({ type: 'audio_url', audio_url: { url } });

/** A one-message user chat request holding `parts`. */
export const chat = (...parts: ContentPart[]): ChatRequestInput => ({ model: MODEL, messages: [{ role: 'user', content: parts }] });

/** 2 images + 2 videos, interleaved: image a, video b, image c, video d (message order). */
export const mixedMedia = (): ChatRequestInput => ({
  model: MODEL,
  messages: [
    { role: 'user', content: [text('look'), image('http://x/a.png'), video('http://x/b.mp4')] },
    { role: 'user', content: [image('http://x/c.png'), text('and'), video('http://x/d.mp4')] },
  ],
});

/** Calls its echo task once per text, in order, and returns the echoes: the simplest multi-call composite. */
export class EchoEach extends CompositeTask<{ texts: string[] }, string[]> {
  readonly echo: EchoTask;
  constructor(echo = new EchoTask({})) {
    super();
    this.echo = echo;
  }
  get name(): string {
    return 'echo-each';
  }
  invoke(input: { texts: string[] }): string[] {
    return input.texts.map((t) => this.echo.invoke({ text: t }).echo);
  }
}

/** A composite whose invoke() is `invoke` (tasks it uses live in the closure): for record/replay behaviour tests. */
export function composite<I, O>(invoke: (input: I) => O, name = 'test-composite'): CompositeTask<I, O> {
  return new (class extends CompositeTask<I, O> {
    get name() {
      return name;
    }
    invoke(input: I): O {
      return invoke(input);
    }
  })();
}

/** A composite made of other tasks, for discovery tests. */
export class Wrapper extends CompositeTask<EchoInput, unknown> {
  constructor(readonly inner: Task[]) {
    super();
  }
  get name(): string {
    return 'wrapper';
  }
  invoke(): unknown {
    return undefined;
  }
}

/** The graph one `task.call(input)` dispatches (through a FakeDispatcher). */
export async function recordGraph<I>(task: Task<I, unknown>, input: unknown): Promise<TaskGraphJSON> {
  const fake = new FakeDispatcher();
  await task.call(input as never, { dispatcher: fake });
  return fake.graphs[0]!;
}
