/**
 * Checks before any load is sent: the gateway answers, and the app (invoke) or model (chat) exists and is
 * ready. Each failure is a CliError that says what to do. Resolves with the app's task ids (for the timeline).
 */
import type { GatewayClient } from '../../control/gateway/client.js';
import { CliError } from '../../lib/cli-errors.js';

export async function preflight(client: GatewayClient, api: 'chat' | 'invoke', name: string): Promise<string[]> {
  const apps = await client.listDetails(); // "cannot reach the gateway at …" when it is down
  const app = apps.find((a) => a.app_id === name || a.name === name || a.aliases.includes(name));
  const known = apps.map((a) => a.name).join(', ') || 'none';
  if (api === 'invoke') {
    if (!app) throw new CliError(`unknown app '${name}' (registered apps: ${known})`);
  } else {
    const res = await fetch(new URL(`/v1/models/${encodeURIComponent(name)}`, client.baseUrl));
    if (res.status === 404) {
      const models = (await (await fetch(new URL('/v1/models', client.baseUrl))).json()) as { data?: Array<{ id: string }> };
      throw new CliError(`unknown model '${name}': no chat app of that name or alias (the gateway's /v1/models lists: ${models.data?.map((m) => m.id).join(', ') || 'none'})`);
    }
    if (!res.ok) throw new CliError(`GET /v1/models/${name}: HTTP ${res.status} ${await res.text()}`);
  }
  if (app && app.state !== 'ready') throw new CliError(`app '${name}' is not ready (state: ${app.state}); wait for its registration to finish`);
  return app?.task_ids ?? [];
}
