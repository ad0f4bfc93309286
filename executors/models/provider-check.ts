/**
 * `node --import tsx executors/models/provider-check.ts <cuda|tensorrt|webgpu> [--session] [--device N]`
 *
 * Whether one GPU execution provider is usable here. Without `--session`: its libraries are beside the onnxruntime
 * binding (providers.ts) — the executor image's build check, which has no GPU to try. With `--session`: also
 * (even when files are missing, so onnxruntime's own error names what it looked for) creates and runs a one-node session on device N with that provider (the executors' start-up probe runs this
 * in a child process, provider-probe.ts, so a crash or a hang cannot take the executor with it).
 * Prints one JSON line on stdout; exit 0 when usable, 1 when not, 2 for bad arguments. A script only (import its
 * types alone).
 */
import { parseArgs } from 'node:util';
import { GPU_PROVIDERS, installFix, providerFiles, type GpuProvider } from './providers.js';

/** The one line this script prints. */
export interface ProviderCheck {
  provider: GpuProvider;
  ok: boolean;
  files: { dir: string; found: string[]; missing: string[] };
  /** Absent without --session. */
  session?: { ok: true; device: number } | { ok: false; device: number; error: string };
  fix?: string;
}

async function sessionRuns(provider: GpuProvider, device: number): Promise<void> {
  // Loaded only here: the image's build check copies this script without the model code.
  const [ort, { GraphBuilder }, { sessionOptionsFor }] = await Promise.all([
    import('onnxruntime-node'), import('./onnx/graph-builder.js'), import('./session-options.js'),
  ]);
  const g = new GraphBuilder('provider_probe');
  const x = g.input('x', 'FLOAT', [1, 4]);
  g.output(g.add(x, g.constF([1, 2, 3, 4], [1, 4])), 'y', 'FLOAT', [1, 4]);
  const session = await ort.InferenceSession.create(g.toBytes(), sessionOptionsFor({ provider, ordinal: device }));
  try {
    const { y } = await session.run({ x: new ort.Tensor('float32', new Float32Array([1, 1, 1, 1]), [1, 4]) });
    const got = Array.from(y!.data as Float32Array);
    if (got.join() !== '2,3,4,5') throw new Error(`the probe graph computed [${got}] instead of [2,3,4,5]`);
  } finally {
    await session.release();
  }
}

async function checkProvider(provider: GpuProvider, session: { device: number } | undefined): Promise<ProviderCheck> {
  const f = providerFiles(provider);
  const files = { dir: f.dir, found: f.found, missing: f.missing };
  const fix = f.installed ? {} : { fix: installFix(provider) };
  // With --session the session is tried even when files are missing: onnxruntime's own error then says what it
  // looked for and where.
  if (!session) return { provider, ok: f.installed, files, ...fix };
  try {
    await sessionRuns(provider, session.device);
    return { provider, ok: f.installed, files, session: { ok: true, device: session.device }, ...fix };
  } catch (e) {
    return { provider, ok: false, files, session: { ok: false, device: session.device, error: (e as Error).message }, ...fix };
  }
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { session: { type: 'boolean' }, device: { type: 'string', default: '0' }, help: { type: 'boolean' } } });
  const provider = positionals[0] as GpuProvider;
  const device = Number(values.device);
  if (values.help || positionals.length !== 1 || !GPU_PROVIDERS.includes(provider) || !Number.isInteger(device) || device < 0) {
    process.stderr.write(`usage: provider-check.ts <${GPU_PROVIDERS.join('|')}> [--session] [--device N]\n`);
    process.exit(values.help ? 0 : 2);
  }
  const result = await checkProvider(provider, values.session ? { device } : undefined);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  if (!result.ok && !values.session) process.stderr.write(`${provider} execution provider not installed: ${result.files.missing.join(', ')} missing from ${result.files.dir}; fix: ${result.fix}\n`);
  process.exit(result.ok ? 0 : 1);
}

await main();
