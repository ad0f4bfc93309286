/** Which llama.cpp builds a GGUF executor tries, for its --gpu choice and the devices it was assigned. */
import test from 'ava';
import { ggufBinaryOrder } from '../../../../policies/gguf-binary.js';

test('auto with CUDA devices tries the CUDA build, then the Vulkan build', (t) => {
  t.deepEqual(ggufBinaryOrder('auto', 'cuda'), ['cuda', 'vulkan']);
});

test('auto without GPU devices runs the CPU build', (t) => {
  t.deepEqual(ggufBinaryOrder('auto', 'cpu'), ['cpu']);
  t.deepEqual(ggufBinaryOrder('auto', undefined), ['cpu']);
});

test('an explicit choice is tried alone, never falling back to another build', (t) => {
  t.deepEqual(ggufBinaryOrder('vulkan', 'cuda'), ['vulkan']);
  t.deepEqual(ggufBinaryOrder('cuda', 'cpu'), ['cuda']);
});
