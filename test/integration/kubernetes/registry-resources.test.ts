/**
 * The task registry on Kubernetes: a registry mirrored to the KubernetesPlatform (as the resource manager does)
 * writes each registered unit task as TaskDefinition and ExecutionDescriptor custom resources, which the list
 * call behind `kubectl get taskdefinitions` returns, and deletes them when the task is unregistered.
 */
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { MemoryStore } from '../../../control/store/index.js';
import { TaskRegistry } from '../../../control/registry/task-registry.js';
import { checkTaskSource } from '../../../control/gateway/source-check.js';
import { logger } from '../../../lib/log.js';
import { repoRoot } from '../../helpers/repo.js';
import { NS, rig } from './fixtures.js';

const TASKDEFS = `/apis/cornserve.ai/v1/namespaces/${NS}/taskdefinitions`;
const DESCRIPTORS = `/apis/cornserve.ai/v1/namespaces/${NS}/executiondescriptors`;

/** What `kubectl get` receives: the list call, with the fake's token. */
async function kubectlGet(url: string): Promise<Array<{ kind: string; metadata: { name: string }; spec: any }>> {
  const res = await fetch(url, { headers: { authorization: 'Bearer test-token' } });
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { items: any[] }).items;
}

async function registryOnKubernetes(t: Parameters<typeof rig>[0]) {
  const r = await rig(t);
  const registry = new TaskRegistry({ store: new MemoryStore(), log: logger('registry'), check: (source) => checkTaskSource(source) });
  // Installed task classes are process-wide: forget this one for the next test.
  t.teardown(async () => {
    if (registry.list().length) await registry.remove('word-count');
    await registry.close();
  });
  await registry.start();
  return { ...r, registry, source: await readFile(`${repoRoot}/examples/registry/word-count.ts`, 'utf8') };
}

test.serial('registering a unit task on the kubernetes platform creates its TaskDefinition and ExecutionDescriptor', async (t) => {
  const { api, platform, registry, source } = await registryOnKubernetes(t);
  await registry.mirrorTo(platform);
  const { record } = await registry.register(source);

  const [def, ...more] = await kubectlGet(api.url + TASKDEFS);
  t.deepEqual(more, []);
  t.is(def!.kind, 'TaskDefinition');
  t.is(def!.metadata.name, 'word-count');
  t.like(def!.spec, { name: 'word-count', className: 'WordCountTask', digest: record.digest, descriptorRef: 'word-count' });
  t.deepEqual(def!.spec.inputSchema, (record.definition as { inputSchema: unknown }).inputSchema);

  const [descriptor] = await kubectlGet(api.url + DESCRIPTORS);
  t.is(descriptor!.metadata.name, 'word-count');
  t.like(descriptor!.spec, { taskClass: 'WordCountTask', kind: 'http-json', path: '/count', launch: { image: 'example/word-count', healthPath: '/health' } });
  t.true(api.requests.some((q) => q.method === 'PATCH' && q.path === `${TASKDEFS}/word-count` && q.contentType?.startsWith('application/apply-patch')), 'server-side apply');
});

test.serial('unregistering a unit task deletes its custom resources', async (t) => {
  const { api, platform, registry, source } = await registryOnKubernetes(t);
  await registry.mirrorTo(platform);
  await registry.register(source);
  t.is((await kubectlGet(api.url + TASKDEFS)).length, 1);

  await registry.remove('word-count');
  t.deepEqual(await kubectlGet(api.url + TASKDEFS), []);
  t.deepEqual(await kubectlGet(api.url + DESCRIPTORS), []);
});

test.serial('definitions registered before the platform was attached are written when it is', async (t) => {
  const { api, platform, registry, source } = await registryOnKubernetes(t);
  await registry.register(source);
  t.deepEqual(await kubectlGet(api.url + TASKDEFS), []);

  await registry.mirrorTo(platform);
  t.deepEqual((await kubectlGet(api.url + TASKDEFS)).map((o) => o.metadata.name), ['word-count']);
});
