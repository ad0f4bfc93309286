/**
 * A platform for the multimodal example apps: the built models, one node's sidecar started here (so tests can
 * read its memory use), `devices` virtual devices, and the given apps registered. Helpers read the LLM
 * executors' /info and wait for the sidecar and the LLMs to be idle. Always `await ap.stop()`.
 */
import OpenAI from 'openai';
import { waitUntil } from '../../lib/wait.js';
import { modelsDir } from './models.js';
import { startPlatform, type TestPlatform } from './platform.js';
import { repoRoot } from './repo.js';
import { startSidecars, type SidecarCluster } from './sidecar.js';

export const exampleApp = (name: string) => `${repoRoot}/functions/apps/${name}.ts`;

export interface LlmInfo { running: number; waiting: number; receiving: number; served: number; modelIds: string[] }

export interface AppPlatform {
  p: TestPlatform;
  sidecars: SidecarCluster;
  /** The official OpenAI client pointed at the gateway's /v1. */
  client: OpenAI;
  /** /info of every LLM executor. */
  llmInfos(): Promise<LlmInfo[]>;
  /** Waits until no LLM holds a request and the sidecar holds no bytes. */
  idle(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startAppPlatform(apps: string[], devices: number): Promise<AppPlatform> {
  const models = await modelsDir();
  const sidecars = await startSidecars({ nodes: [Array.from({ length: devices }, (_, i) => i)] });
  let p: TestPlatform | undefined;
  try {
    p = await startPlatform({ devices, childEnv: { CORNSERVE_MODELS_DIR: models } });
    p.platform.setSidecarUrl('local', `unix:${sidecars.nodes[0]!.socketPath}`);
    for (const app of apps) await p.register(exampleApp(app));
  } catch (e) {
    await p?.stop();
    await sidecars.stop();
    throw e;
  }
  const platform = p;
  const llmInfos = async () => {
    const executors = (await platform.store.listExecutors()).filter((r) => r.executorId.startsWith('llm-'));
    return Promise.all(executors.map(async (r) => (await (await fetch(`${r.url}/info`)).json()) as LlmInfo));
  };
  return {
    p: platform,
    sidecars,
    client: new OpenAI({ baseURL: `${platform.gatewayUrl}/v1`, apiKey: 'unused', maxRetries: 0 }),
    llmInfos,
    async idle(timeoutMs = 15_000) {
      await waitUntil('the LLMs hold no request', async () => (await llmInfos()).every((i) => i.running + i.waiting + i.receiving === 0), { timeoutMs });
      await waitUntil('the sidecar holds no bytes', async () => (await sidecars.nodes[0]!.health()).bytesInUse === 0, { timeoutMs });
    },
    async stop() {
      await platform.stop();
      await sidecars.stop();
    },
  };
}
