/**
 * The RedisStore's Lua scripts: each lives in lua/<name>-<nKeys>.lua (header = KEYS/ARGV/returns),
 * is read from disk once, and is registered on a connection with `defineCommand` (EVALSHA, falling back
 * to EVAL when the server does not have it cached, e.g. after a restart).
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

export type ScriptName =
  | 'put-app'
  | 'delete-app'
  | 'update-hash'
  | 'acquire-task'
  | 'release-task'
  | 'delete-indexed'
  | 'put-executor'
  | 'set-executor-state'
  | 'adjust-outstanding'
  | 'delete-executor'
  | 'delete-chunk'
  | 'take-expired-chunks'
  | 'renew-sidecar'
  | 'delete-sidecar'
  | 'patch-autoscale';

interface ScriptSource {
  lua: string;
  numberOfKeys: number;
  command: string;
}

const luaDir = new URL('./lua/', import.meta.url);
let sources: Map<string, ScriptSource> | undefined;

function loadSources(): Map<string, ScriptSource> {
  if (sources) return sources;
  sources = new Map();
  for (const file of readdirSync(luaDir)) {
    const m = /^([a-z-]+)-(\d+)\.lua$/.exec(file);
    if (!m) continue;
    const name = m[1]!;
    const command = `cornserve_${name.replace(/-/g, '_')}`;
    sources.set(name, { lua: readFileSync(new URL(file, luaDir), 'utf8'), numberOfKeys: Number(m[2]), command });
  }
  return sources;
}

export type RunScript = (name: ScriptName, keys: string[], args: Array<string | number>) => Promise<unknown>;

/** Registers every script on `redis` and returns a typed runner for them. */
export function defineScripts(redis: Redis): RunScript {
  const all = loadSources();
  for (const { lua, numberOfKeys, command } of all.values()) redis.defineCommand(command, { lua, numberOfKeys });
  const commands = redis as unknown as Record<string, (...args: Array<string | number>) => Promise<unknown>>;
  return (name, keys, args) => {
    const source = all.get(name);
    if (!source) throw new Error(`no Lua script ${name} in ${luaDir.pathname}`);
    if (keys.length !== source.numberOfKeys) {
      throw new Error(`script ${name} takes ${source.numberOfKeys} keys, got ${keys.length}`);
    }
    return commands[source.command]!.call(redis, ...keys, ...args);
  };
}
