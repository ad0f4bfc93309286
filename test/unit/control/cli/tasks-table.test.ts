import test from 'ava';
import type { TaskInfo } from '../../../../control/gateway/client.js';
import { tasksTable } from '../../../../control/cli/commands.js';
import { taskIdOf } from '../../../../control/store/index.js';
import { EncoderTask } from '../../../../functions/tasks/encoder.js';

const info = (task: EncoderTask): TaskInfo => ({
  task_id: taskIdOf(task),
  name: task.name,
  task_class: 'EncoderTask',
  task: task.toJSON(),
  state: 'ready',
  usage: 1,
  devices: [],
  executors: [],
});

test('two unit tasks of the same name are told apart by their class and config', (t) => {
  const one = new EncoderTask({ modality: 'image', modelIds: ['cornserve/tiny-vlm-a'] });
  const two = new EncoderTask({ modality: 'image', modelIds: ['cornserve/tiny-vlm-a', 'cornserve/tiny-vlm-b'] });
  t.is(one.name, two.name); // the premise: the name alone does not tell them apart
  const [header, a, b] = tasksTable([info(one), info(two)]).split('\n');
  t.regex(header!, /TASK ID\s+NAME\s+CLASS\s+CONFIG\s+STATE/);
  t.regex(a!, /EncoderTask\s+modality=image modelIds=cornserve\/tiny-vlm-a maxBatchSize=1\s+ready/);
  t.regex(b!, /EncoderTask\s+modality=image modelIds=cornserve\/tiny-vlm-a,cornserve\/tiny-vlm-b maxBatchSize=1\s+ready/);
});

test("each task's row shows where its executors compute, a CPU fallback included", (t) => {
  const task = new EncoderTask({ modality: 'image', modelIds: ['cornserve/tiny-vlm-a'], tensorParallel: 2 });
  const executor = (id: string, execution: TaskInfo['executors'][number]['execution']) => ({ executor_id: id, url: 'http://x', state: 'ready', outstanding: 0, execution });
  const [header, row] = tasksTable([{
    ...info(task),
    executors: [executor('a', { provider: 'cuda', device: 'cuda:0,1', cpuFallback: false }), executor('b', { provider: 'cpu', device: 'cpu (GPUs cuda:2,3 asked for)', cpuFallback: true })],
  }]).split('\n');
  t.regex(header!, /EXECUTORS\s+EXECUTION$/);
  t.regex(row!, /cuda cuda:0,1; cpu \(GPUs cuda:2,3 asked for\)$/);
});
