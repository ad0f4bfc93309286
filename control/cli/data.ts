/**
 * The DATA argument of `cornserve invoke`: a JSON literal, a JSON or YAML file, or `-` for stdin
 * (JSON first, then YAML).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { CliError } from '../../lib/cli-errors.js';

async function readStdin(): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of process.stdin as AsyncIterable<Buffer>) parts.push(part);
  return Buffer.concat(parts).toString('utf8');
}

function parseText(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    /* try YAML */
  }
  try {
    return parseYaml(text) as unknown;
  } catch (e) {
    throw new CliError(`${where} is neither JSON nor YAML: ${(e as Error).message}`);
  }
}

export async function readRequestData(arg: string, stdin: () => Promise<string> = readStdin): Promise<unknown> {
  if (arg === '-') return parseText(await stdin(), 'stdin');
  const trimmed = arg.trim();
  if (/^[[{"]/.test(trimmed)) {
    try {
      return JSON.parse(trimmed);
    } catch (e) {
      throw new CliError(`DATA is not valid JSON: ${(e as Error).message}`);
    }
  }
  if (existsSync(arg)) return parseText(await readFile(arg, 'utf8'), arg);
  try {
    return JSON.parse(trimmed); // numbers, true, null
  } catch {
    throw new CliError(`DATA must be a JSON literal, a JSON/YAML file or - (stdin); no file named ${arg}`);
  }
}
