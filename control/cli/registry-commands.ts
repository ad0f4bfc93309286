/** `cornserve tasks register FILE.ts` and `cornserve tasks unregister NAME` (the task registry, docs/registry.md). */
import { readFile } from 'node:fs/promises';
import type { GatewayClient } from '../gateway/client.js';
import type { Io } from '../../lib/io.js';
import { CliError } from '../../lib/cli-errors.js';

export async function registerTaskCommand(client: GatewayClient, file: string, io: Io): Promise<void> {
  let source: string;
  try {
    source = await readFile(file, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as Error).message}`);
  }
  const r = await client.registerTask(source);
  io.out(r.created ? `registered unit task ${r.name} (${r.class_name}); apps import it from 'cornserve/registry/${r.name}'` : `unit task ${r.name} (${r.class_name}) was already registered with this definition`);
}

export async function unregisterTaskCommand(client: GatewayClient, name: string, io: Io): Promise<void> {
  await client.unregisterTask(name);
  io.out(`removed unit task ${name}`);
}
