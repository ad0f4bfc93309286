/** Geri as a process: its command line, and what happens when its engine process dies. */
import { spawnSync } from 'node:child_process';
import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { type GeriNode, dataId, embeddings, sendEmbeddings, startGeriNode } from '../../helpers/geri.js';
import { repoRoot } from '../../helpers/repo.js';

test('--help lists the options', (t) => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'executors/geri/main.ts', '--help'], { cwd: repoRoot, encoding: 'utf8', timeout: 30_000 });
  t.is(r.status, 0);
  for (const opt of ['--model-id', '--modality', '--max-batch-size', '--models-dir', '--sidecar-socket', '--timeout-ms']) t.true(r.stdout.includes(opt), opt);
});

test('a missing --modality is refused with a usage error', (t) => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'executors/geri/main.ts', '--model-id', 'cornserve/tiny-image-gen'], { cwd: repoRoot, encoding: 'utf8', timeout: 30_000 });
  t.not(r.status, 0);
  t.regex(r.stderr, /--modality/);
});

test('when the engine process dies, /health answers 503 and requests fail with EXECUTOR_ENGINE_DEAD', async (t) => {
  const g: GeriNode = await startGeriNode({ modality: 'image' });
  t.teardown(() => g.stop());
  const { enginePid } = (await g.geri.info()) as unknown as { enginePid: number };
  process.kill(enginePid, 'SIGKILL');
  await waitUntil('geri reports the engine dead', async () => (await fetch(`${g.geri.url}/health`)).status === 503);
  const id = dataId();
  await sendEmbeddings(g.producer, id, embeddings(8), g.toGeri);
  const res = await g.geri.post('/image/generate', { embedding_data_id: id, height: 16, width: 16 });
  t.is(res.status, 503);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'EXECUTOR_ENGINE_DEAD');
  await t.notThrowsAsync(g.memoryFreed());
});
