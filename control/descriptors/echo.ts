import { EchoTask, EchoStreamTask, type EchoBaseTask } from '../../functions/tasks/echo.js';
import type { TaskDescriptor } from '../../lib/descriptor.js';
import { ndjsonLines } from '../../functions/sdk/index.js';

/** EchoTask / EchoStreamTask -> the echo executor's POST /echo. */
export const echoDescriptor: TaskDescriptor<EchoBaseTask<unknown>> = {
  name: 'default',
  taskClass: 'EchoBaseTask',
  executorName: (task) => task.name,
  launch: (task) => ({
    kind: 'echo',
    entry: 'executors/echo/main.ts',
    image: 'cornserve/echo',
    args: ['--service-time-ms', String(task.config.serviceTimeMs), ...(task.config.maxConcurrency === undefined ? [] : ['--max-concurrency', String(task.config.maxConcurrency)])],
    devicesPerExecutor: 1,
  }),
  request: (task, input) => {
    const { text, chunks } = input as { text: string; chunks?: number };
    if (task instanceof EchoStreamTask) return { path: '/echo', body: { text, chunks: chunks ?? 1, service_time_ms: task.config.serviceTimeMs } };
    if (task instanceof EchoTask) return { path: '/echo', body: { text, service_time_ms: task.config.serviceTimeMs } };
    throw new Error(`echo descriptor cannot serve ${task.constructor.name}`);
  },
  profiling: {
    sample: (task) => (task instanceof EchoStreamTask ? { input: { text: 'profile', chunks: 4 }, output: {} } : { input: { text: 'profile' }, output: { echo: '' } }),
    devicesPerExecutorOptions: () => [1],
  },
  response: async (task, _output, res) => {
    if (task instanceof EchoStreamTask) return { output: {}, stream: ndjsonLines(res.body as unknown as AsyncIterable<Uint8Array>) };
    return { output: await res.json() };
  },
};
