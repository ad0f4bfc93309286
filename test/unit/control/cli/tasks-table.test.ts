import test from 'ava';
import type { TaskInfo } from '../../../../control/cli/client.js';
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
