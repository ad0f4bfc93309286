/**
 * Loads any model folder with a manifest.json: validates the manifest (errors name the field), opens one
 * onnxruntime session per graph (shared body graphs + per-model-id adapter graphs) and checks each graph's
 * input/output names against the manifest.
 */
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import ort from 'onnxruntime-node';
import { modelErrors } from './errors.js';
import { processExecution } from './execution.js';
import { sessionDevice, sessionOptionsFor } from './session-options.js';
import { MANIFEST_FILE, Manifest, type GraphSpec, type ModelIdSpec, defaultGraphNames, describeIssues } from './manifest.js';

export async function loadManifest(dir: string): Promise<Manifest> {
  const path = join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw modelErrors.notFound(`no ${MANIFEST_FILE} in ${dir}`, { dir });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw modelErrors.manifestInvalid(`${path}: not valid JSON (${(e as Error).message})`, { path });
  }
  const parsed = Manifest.safeParse(json);
  if (!parsed.success) {
    throw modelErrors.manifestInvalid(`${path}: ${describeIssues(parsed.error)}`, {
      path, fields: parsed.error.issues.map((i) => i.path.join('.')),
    });
  }
  return parsed.data;
}

export interface LoadOptions {
  /** Shared graphs to open (default: all except tensor-parallel shards). */
  graphs?: string[];
  /** Model ids whose adapter graphs to open (default: all). */
  modelIds?: string[];
  sessionOptions?: ort.InferenceSession.SessionOptions;
  /** Tensor-parallel rank whose device the sessions use (execution.ts; default 0). */
  rank?: number;
  /** The folder's manifest when it has no manifest.json (a Hugging Face folder: hf-encoder.ts). */
  manifest?: Manifest;
}

export type Session = ort.InferenceSession;

/**
 * The one place executors open an ONNX Runtime session (manifest graphs and Hugging Face parts alike), so the
 * execution provider for a device assignment is chosen here and nowhere else.
 */
export async function createSession(path: string, options: ort.InferenceSession.SessionOptions = {}, rank = 0): Promise<Session> {
  // This process's device (session-options.ts): the rank's ordinal under CUDA, else the CPU.
  return ort.InferenceSession.create(path, sessionOptionsFor(sessionDevice(processExecution(), rank), options));
}

export class LoadedModel {
  constructor(
    readonly dir: string,
    readonly manifest: Manifest,
    /** Shared graphs by name. */
    readonly sessions: Readonly<Record<string, Session>>,
    /** Adapter graphs by model id, then by graph name. */
    readonly adapters: Readonly<Record<string, Readonly<Record<string, Session>>>>,
  ) {}

  /** A shared graph's session (throws MODEL_UNSUPPORTED if the model has no such graph loaded). */
  graph(name: string): Session {
    const s = this.sessions[name];
    if (!s) throw modelErrors.unsupported(`model '${this.manifest.name}' has no loaded graph '${name}'`);
    return s;
  }

  /** The spec of a served model id (throws MODEL_UNSUPPORTED naming the served ids). */
  modelId(id: string): ModelIdSpec {
    const spec = this.manifest.model_ids[id];
    if (!spec) {
      throw modelErrors.unsupported(`model '${this.manifest.name}' does not serve model id '${id}' (serves: ${Object.keys(this.manifest.model_ids).join(', ')})`);
    }
    return spec;
  }

  /** An adapter graph's session for a model id, or undefined when that id has no such adapter. */
  adapter(id: string, graph: string): Session | undefined {
    this.modelId(id);
    return this.adapters[id]?.[graph];
  }

  async close(): Promise<void> {
    const all = [...Object.values(this.sessions), ...Object.values(this.adapters).flatMap((a) => Object.values(a))];
    await Promise.all([...new Set(all)].map((s) => s.release()));
  }
}

async function openGraph(dir: string, name: string, spec: GraphSpec, options: ort.InferenceSession.SessionOptions, rank: number): Promise<Session> {
  const path = join(dir, spec.file);
  try {
    await access(path);
  } catch {
    throw modelErrors.manifestMismatch(`graph '${name}': file ${spec.file} does not exist in ${dir}`, { graph: name, file: spec.file });
  }
  let session: Session;
  try {
    session = await createSession(path, options, rank);
  } catch (e) {
    throw modelErrors.manifestMismatch(`graph '${name}': onnxruntime cannot load ${spec.file}: ${(e as Error).message}`, { graph: name });
  }
  const missing = [
    ...spec.inputs.filter((i) => !session.inputNames.includes(i.name)).map((i) => `input '${i.name}'`),
    ...spec.outputs.filter((o) => !session.outputNames.includes(o.name)).map((o) => `output '${o.name}'`),
  ];
  if (missing.length) {
    await session.release();
    throw modelErrors.manifestMismatch(
      `graph '${name}' (${spec.file}) has no ${missing.join(', ')}; it has inputs [${session.inputNames.join(', ')}] and outputs [${session.outputNames.join(', ')}]`,
      { graph: name, missing },
    );
  }
  return session;
}

/** Loads the manifest and opens the sessions; on any failure, sessions opened so far are released. */
export async function loadModel(dir: string, opts: LoadOptions = {}): Promise<LoadedModel> {
  const manifest = opts.manifest ?? await loadManifest(dir);
  // The one place the execution provider is chosen: this process's device (session-options.ts).
  const options = opts.sessionOptions ?? {};
  const opened: Session[] = [];
  const open = async (name: string, spec: GraphSpec) => {
    const s = await openGraph(dir, name, spec, options, opts.rank ?? 0);
    opened.push(s);
    return s;
  };
  try {
    const sessions: Record<string, Session> = {};
    for (const name of opts.graphs ?? defaultGraphNames(manifest)) {
      const spec = manifest.graphs[name];
      if (!spec) throw modelErrors.unsupported(`model '${manifest.name}' has no graph '${name}' (has: ${Object.keys(manifest.graphs).join(', ')})`);
      sessions[name] = await open(name, spec);
    }
    const adapters: Record<string, Record<string, Session>> = {};
    for (const id of opts.modelIds ?? Object.keys(manifest.model_ids)) {
      const spec = manifest.model_ids[id];
      if (!spec) throw modelErrors.unsupported(`model '${manifest.name}' does not serve model id '${id}'`);
      adapters[id] = {};
      for (const [g, gs] of Object.entries(spec.graphs)) adapters[id][g] = await open(`${id}:${g}`, gs);
    }
    return new LoadedModel(dir, manifest, sessions, adapters);
  } catch (e) {
    await Promise.all(opened.map((s) => s.release()));
    throw e;
  }
}
