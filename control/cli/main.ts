/**
 * `cornserve`: the command line. `up` runs the whole platform in the foreground; every other command
 * talks to a running gateway (CORNSERVE_GATEWAY_URL, default http://127.0.0.1:8000) and sends
 * CORNSERVE_ADMIN_TOKEN on the admin routes.
 */
import './node-version.js'; // first: refuse a too-old Node before anything else loads
import { Command, Option } from 'commander';
import { benchCommand } from './bench.js';
import { simulateCommand } from '../../sim/command.js';
import { planCommand } from '../../plan/command.js';
import { experimentCommand } from '../../experiment/command.js';
import { DEFAULT_CLIENT_TIMEOUT_MS, GatewayClient } from '../gateway/client.js';
import { applyPlanCommand, autoscaleCommand, invokeCommand, listCommand, registerCommand, scaleCommand, tasksCommand, unregisterCommand } from './commands.js';
import type { Io } from '../../lib/io.js';
import { CliError } from '../../lib/cli-errors.js';
import { quietOnClosedPipe } from './closed-pipe.js';
import { profileCommand, tasksWithProfilesCommand } from './profile.js';
import { BODY_LIMIT_ENV, DEFAULT_BODY_LIMIT_BYTES } from '../../lib/body-limit.js';
import type { UpCommandOptions } from '../compose/up.js';
import { DEFAULT_BLOCKED_LIMIT_MS } from '../gateway/blocked-loop.js';
import { DEFAULT_DRAIN_TIMEOUT_MS } from '../gateway/in-flight.js';
import { EXECUTION_PROVIDER_ENV, GPU_PROVIDERS } from '../../executors/models/providers.js';

const io: Io = { out: (l) => console.log(l), err: (l) => console.error(l) };
// Every command: a reader that closes the pipe early (`| head`) ends our output, not the command with a stack trace.
quietOnClosedPipe(process.stdout);
quietOnClosedPipe(process.stderr);

const program = new Command('cornserve')
  .description('Cornserve: serve multimodal apps built from shared model tasks')
  .version('0.1.0')
  .addOption(new Option('--gateway <url>', 'gateway URL').env('CORNSERVE_GATEWAY_URL').default('http://127.0.0.1:8000'))
  .addOption(new Option('--token <token>', 'admin token for the commands that change the platform: register, unregister, scale, autoscale, profile, tasks register / unregister, apply-plan').env('CORNSERVE_ADMIN_TOKEN'))
  .addOption(
    new Option('--client-timeout-ms <ms>', 'longest wait for the gateway to answer, and then between two pieces of its answer (invoke: on top of its deadline)')
      .env('CORNSERVE_CLIENT_TIMEOUT_MS')
      .default(String(DEFAULT_CLIENT_TIMEOUT_MS)),
  )
  .showHelpAfterError();

/** The platform's one body limit (lib/body-limit.ts): the gateway's, and every hop behind it takes at least as much. */
const bodyLimitOption = () =>
  new Option('--body-limit <bytes>', 'largest accepted request body, in bytes (the whole platform agrees on it)').env(BODY_LIMIT_ENV).default(String(DEFAULT_BODY_LIMIT_BYTES));

const milliseconds = (option: string) => (value: string) => {
  const ms = Number(value);
  if (!Number.isSafeInteger(ms) || ms < 0) throw new CliError(`${option} must be a whole number of milliseconds (0 or more), got ${JSON.stringify(value)}`);
  return ms;
};
const positiveMs = (option: string) => (value: string) => {
  const ms = milliseconds(option)(value);
  if (ms === 0) throw new CliError(`${option} must be more than 0 milliseconds`);
  return ms;
};
/** The gateway's drain (AppManager) and blocked-loop watcher (AppFunctions), for `up` and the gateway role. */
const drainTimeoutOption = () =>
  new Option('--drain-timeout <ms>', 'on shutdown (Ctrl-C) and unregister: how long in-flight requests may finish before they are cut (new ones get 503 meanwhile)')
    .argParser(milliseconds('--drain-timeout')).default(DEFAULT_DRAIN_TIMEOUT_MS);
const blockedLimitOption = () =>
  new Option('--blocked-limit <ms>', 'kill and restart an app function whose event loop is blocked this long (0 = never)')
    .argParser(milliseconds('--blocked-limit')).default(DEFAULT_BLOCKED_LIMIT_MS);

const client = () => {
  const { gateway, token, clientTimeoutMs } = program.opts<{ gateway: string; token?: string; clientTimeoutMs: string }>();
  const timeoutMs = Number(clientTimeoutMs);
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) throw new CliError(`--client-timeout-ms must be a positive number of milliseconds, got ${clientTimeoutMs}`);
  return new GatewayClient(gateway, token, timeoutMs);
};

program
  .command('up')
  .description('run the platform in the foreground: store, local platform, resource manager, dispatcher, gateway (Ctrl-C stops everything)')
  .option('--port <port>', 'gateway port', '8000')
  .option('--host <host>', 'gateway address', '127.0.0.1')
  .option('--devices <n|auto>', "devices on the local node: a count of virtual CPU devices, or 'auto' (the GPUs nvidia-smi lists; none or no nvidia-smi: 4 CPU devices)", '4')
  .option('--allow-cpu-fallback', 'executors run on the CPU, with a loud warning and /health execution.cpuFallback, when GPUs were found but their execution provider is not installed or fails its start-up probe (default: they fail at start-up)')
  .addOption(new Option('--execution-provider <name>', 'the ONNX Runtime provider executors use on GPUs (docs/gpus.md)').choices(GPU_PROVIDERS).env(EXECUTION_PROVIDER_ENV).default('cuda'))
  .option('--redis <url>', 'keep all control-plane state in Redis (restarting `up` on the same Redis brings apps and tasks back)')
  .option('--apps <dir>', 'register every app file (*.ts) in this folder at start')
  .option('--models <dirs>', 'model directories (colon-separated; added to $CORNSERVE_MODELS): a task\'s modelId may name a folder in them. (CORNSERVE_MODELS_DIR is another setting: where the built-in tiny models are, default .models)')
  .addOption(new Option('--admin-token <token>', 'admin token (default: $CORNSERVE_ADMIN_TOKEN, else a generated one, printed once)').env('CORNSERVE_ADMIN_TOKEN'))
  .addOption(bodyLimitOption())
  .addOption(drainTimeoutOption())
  .addOption(blockedLimitOption())
  .addOption(
    new Option('--dispatch <mode>', 'how app functions run task graphs: in-process (no hop to the dispatcher; executor leases counted in Redis with --redis, else in this process over its store link), cloudevent (through the dispatcher service), auto = in-process')
      .choices(['auto', 'in-process', 'cloudevent'])
      .default('auto')
      .env('CORNSERVE_DISPATCH'),
  )
  .addOption(
    new Option('--function-hop <hop>', 'how the gateway calls app functions: link (one framed connection per function, requests multiplexed on it) or http (an HTTP request per invocation)')
      .choices(['link', 'http'])
      .default('link')
      .env('CORNSERVE_FUNCTION_HOP'),
  )
  .option('--no-autoscale', 'keep manual scaling only (by default every task autoscales: min 1, max = the pool, target 2 in flight per executor, unless its app or `cornserve autoscale` says otherwise)')
  // The autoscaler's timing (control/autoscaler/autoscaler.ts); short values make a demo or a test react in seconds.
  .addOption(new Option('--autoscale-tick <ms>', 'autoscaling: one decision round every this long (default 500)').argParser(positiveMs('--autoscale-tick')))
  .addOption(new Option('--autoscale-stable-window <ms>', 'autoscaling: the window load is averaged over for steady decisions (default 60000)').argParser(positiveMs('--autoscale-stable-window')))
  .addOption(new Option('--autoscale-panic-window <ms>', 'autoscaling: the short window that answers a sudden rise (default 6000)').argParser(positiveMs('--autoscale-panic-window')))
  .addOption(new Option('--autoscale-scale-down-delay <ms>', 'autoscaling: how long fewer executors must suffice before a scale-down (default 30000)').argParser(positiveMs('--autoscale-scale-down-delay')))
  .action(async (opts: UpCommandOptions) => {
    const { upCommand } = await import('../compose/up.js');
    await upCommand(opts, io);
  });

const models = program
  .command('models')
  .description('list the model folders (Hugging Face exports and manifest folders) in DIRs (default: $CORNSERVE_MODELS, your model directories, colon-separated; and $CORNSERVE_MODELS_DIR, the built-in tiny models, default .models)')
  .argument('[dirs...]', 'directories to scan')
  .action(async (dirs: string[]) => {
    const { modelsListCommand } = await import('./models.js');
    await modelsListCommand(dirs, io);
  });
models
  .command('check <folder|name>')
  .description('validate one model folder (a path, or a name `cornserve models` lists): its parts load, their inputs and outputs are the ones expected, their shapes agree with config.json')
  .action(async (folder: string) => {
    const { modelsCheckCommand } = await import('./models.js');
    await modelsCheckCommand(folder, io);
  });

program
  .command('doctor')
  .description('what this machine has for serving (Node, npm, the sidecar addon, onnxruntime-node and its GPU providers, GPUs, CUDA and Vulkan libraries, llama.cpp binaries, Redis, /dev/shm, model folders) and a numbered list of problems with their fixes; exit 1 when there is any')
  .option('--json', 'print the whole report as JSON (the problems under "problems")')
  .option('--models <dirs>', 'model directories to check (colon-separated, as `up --models`; with $CORNSERVE_MODELS and the built-in models)')
  .option('--no-probe', 'skip the probe sessions of the GPU providers (each starts a short child process)')
  .action(async (opts: { json?: boolean; models?: string; probe: boolean }) => {
    const { doctorCommand } = await import('./doctor.js');
    await doctorCommand(opts, io);
  });

program
  .command('register <file>')
  .description('register an app (a TypeScript file) and deploy its tasks; shows progress')
  .option('--alias <alias>', 'another name to call the app by')
  .option('--name <name>', "register under this name instead of the app's own")
  .action(async (file: string, opts: { alias?: string; name?: string }) => {
    await registerCommand(client(), file, opts, io);
  });

program
  .command('unregister <app>')
  .description('unregister an app (id, name or alias); its tasks are torn down when no other app uses them')
  .action((app: string) => unregisterCommand(client(), app, io));

program
  .command('list')
  .description('list registered apps and their state')
  .action(() => listCommand(client(), io));

program
  .command('invoke <app> <data>')
  .description('invoke an app; DATA is a JSON literal, a JSON or YAML file, or - for stdin; streams print line by line')
  .option('--timeout-ms <ms>', 'request deadline in milliseconds (default 5 minutes)')
  .action((app: string, data: string, opts: { timeoutMs?: string }) =>
    invokeCommand(client(), app, data, opts.timeoutMs ? { timeoutMs: Number(opts.timeoutMs) } : {}, io),
  );

program
  .command('profile <task>')
  .description("measure a task's throughput and p50/p99 latency at rising concurrency on one of its executors (routing prefers its other executors meanwhile) and store the profile for every app using an equivalent task")
  .action((task: string) => profileCommand(client(), task, io));

program
  .command('tasks')
  .description('list deployed unit tasks, their devices and executors')
  .option('--profile', "also show each task's stored profile (throughput–latency points, frontier, saturation)")
  .action((opts: { profile?: boolean }) => (opts.profile ? tasksWithProfilesCommand(client(), io) : tasksCommand(client(), io)));

{
  // Subcommands of `tasks`: the task registry (user-defined unit tasks, docs/registry.md).
  const tasks = program.commands.find((c) => c.name() === 'tasks')!;
  tasks
    .command('register <file>')
    .description("register a user-defined unit task (a TypeScript file default-exporting defineUnitTask); apps then import it from 'cornserve/registry/<name>'")
    .action(async (file: string) => (await import('./registry-commands.js')).registerTaskCommand(client(), file, io));
  tasks
    .command('unregister <name>')
    .description('remove a registered unit task no app or session uses')
    .action(async (name: string) => (await import('./registry-commands.js')).unregisterTaskCommand(client(), name, io));
}

program
  .command('scale <task> <n>')
  .description('add (+N) or remove (-N) devices of a unit task; removed executors are drained first; at zero executors the apps using it get 503 NO_EXECUTOR until it is scaled up again')
  .action((task: string, n: string) => scaleCommand(client(), task, n, io));

program
  .command('autoscale <task>')
  .description('autoscale a unit task between --min and --max executors, by in-flight requests per executor (--target, default 2) or a latency SLO (--slo-ms); `cornserve scale` turns a task back to manual')
  .requiredOption('--min <n>', 'fewest executors (0 = scale to zero: requests wait while one starts)')
  .requiredOption('--max <n>', 'most executors (at most what the device pool holds)')
  .option('--target <n>', 'in-flight requests per executor to aim for')
  .option('--slo-ms <ms>', 'latency objective per invocation, in ms')
  .action((task: string, opts: { min: string; max: string; target?: string; sloMs?: string }) => autoscaleCommand(client(), task, opts, io));

program
  .command('apply-plan <file>')
  .description('deploy a plan file (`cornserve plan --out`) on the running platform: each task of the plan\'s app is scaled to the plan\'s executors; the whole plan is checked first (its tasks, devices per executor, the fit, autoscaling min/max) and applied all or nothing; with autoscaling on, the plan\'s counts are where the autoscaler starts (policies kept)')
  .addHelpText('after', `
Example:
  cornserve plan --apps functions/apps/mllm.ts --mix text:0.3,image:0.7 --devices 4 --device local-cpu --out plan.yaml
  cornserve register functions/apps/mllm.ts
  cornserve apply-plan plan.yaml

The plan's app must be registered. Labels name its tasks (encoder:image, llm:MODEL, ...; see \`cornserve tasks\`).
An encoder with 0 replicas (monolithic or mixed plan) needs the app registered with the encoder inside the LLM
(encoderFission: false). Devices per executor must match the deployed task (its tensor-parallel degree is part of
the task's config). Placement is checked to exist and fit; the live allocation policy places the executors.`)
  .action((file: string) => applyPlanCommand(client(), file, io));

program
  .command('manifests <file>')
  .description("print an app's ConfigMap and Knative Service (YAML) for kubectl apply -f - (CORNSERVE_* variables set image, namespace, autoscaling)")
  .option('--name <name>', "use this name instead of the app's own")
  .action(async (file: string, opts: { name?: string }) => {
    const { manifestsYaml } = await import('./manifests.js');
    process.stdout.write(await manifestsYaml(file, opts));
  });

program.addCommand(benchCommand(io, () => program.opts<{ gateway: string }>().gateway));
program.addCommand(simulateCommand(io));
program.addCommand(planCommand(io));
program.addCommand(experimentCommand(io));

/** A control-plane role as its own process: every role takes --port, --host and --redis (the shared Store). */
const roleCommand = (name: string, description: string, port: string) =>
  program
    .command(name)
    .description(description)
    .option('--port <port>', 'HTTP port', port)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .addOption(new Option('--redis <url>', 'Redis Store URL').env('CORNSERVE_STORE_URL'));
const REDIS_REQUIRED = '--redis (or CORNSERVE_STORE_URL)';

roleCommand('resource-manager', 'run the resource manager as its own process (devices, task managers, platform) with its HTTP API', '8001')
  .addOption(new Option('--platform <kind>', 'where executors and app functions run').choices(['local', 'kubernetes']).env('CORNSERVE_PLATFORM').default('local'))
  .option('--devices <n>', 'local platform: virtual devices', '4')
  .option('--health-timeout-ms <ms>', "bound on one executor's start")
  .option('--no-autoscale', 'keep manual scaling only (by default tasks autoscale; see `cornserve autoscale --help`)')
  .action(async (opts: { port: string; host: string; redis?: string; platform: 'local' | 'kubernetes'; devices: string; healthTimeoutMs?: string; autoscale: boolean }) => {
    const { required, runRole, startResourceManagerRole } = await import('../compose/roles.js');
    const redisUrl = required(opts.redis, REDIS_REQUIRED);
    await runRole(() => startResourceManagerRole({
      redisUrl, platform: opts.platform, port: Number(opts.port), host: opts.host, devices: Number(opts.devices), autoscale: opts.autoscale,
      ...(opts.healthTimeoutMs ? { healthTimeoutMs: Number(opts.healthTimeoutMs) } : {}),
    }), io);
  });

roleCommand('gateway', 'run the gateway as its own process, against a resource-manager and a dispatcher process', '8000')
  .addOption(new Option('--resource-manager <url>', 'resource manager URL').env('CORNSERVE_RESOURCE_MANAGER_URL'))
  .addOption(new Option('--dispatcher <url>', 'dispatcher URL').env('CORNSERVE_DISPATCHER_URL'))
  .addOption(new Option('--admin-token <token>', 'admin token').env('CORNSERVE_ADMIN_TOKEN'))
  .addOption(bodyLimitOption())
  .addOption(drainTimeoutOption())
  .addOption(blockedLimitOption())
  .action(async (opts: { port: string; host: string; redis?: string; resourceManager?: string; dispatcher?: string; adminToken?: string; bodyLimit: string; drainTimeout: number; blockedLimit: number }) => {
    const { required, runRole, startGatewayRole } = await import('../compose/roles.js');
    const settings = {
      redisUrl: required(opts.redis, REDIS_REQUIRED),
      resourceManagerUrl: required(opts.resourceManager, '--resource-manager (or CORNSERVE_RESOURCE_MANAGER_URL)'),
      dispatcherUrl: required(opts.dispatcher, '--dispatcher (or CORNSERVE_DISPATCHER_URL)'),
      adminToken: required(opts.adminToken, '--admin-token (or CORNSERVE_ADMIN_TOKEN)'),
    };
    await runRole(() => startGatewayRole({
      ...settings, port: Number(opts.port), host: opts.host, bodyLimitBytes: Number(opts.bodyLimit), drainTimeoutMs: opts.drainTimeout, blockedLimitMs: opts.blockedLimit,
    }), io);
  });

try {
  await program.parseAsync();
} catch (e) {
  io.err(`error: ${busyPort(e) ?? (e instanceof CliError || e instanceof Error ? e.message : String(e))}`);
  process.exitCode = 1;
}

/** A port already in use (`up`, a role): say which, and how to pick another. */
function busyPort(e: unknown): string | undefined {
  const err = e as { code?: unknown; port?: unknown; address?: unknown };
  if (err?.code !== 'EADDRINUSE') return undefined;
  const where = err.port !== undefined ? `${String(err.address ?? '')}:${String(err.port)}` : 'the port';
  return `${where} is already in use (another \`cornserve up\`, or another server): pick another port with --port N (make run PORT=N), or stop what holds it`;
}
