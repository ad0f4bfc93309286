/**
 * The knative/ overlays render offline with `kubectl kustomize` (CI installs Debian's kubernetes-client when
 * kubectl is missing; set KUBECTL to try another binary) and every rendered object validates against the
 * Kubernetes schemas. The RBAC tests pin the least-privilege promise of each component.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { KubeConfig } from '@kubernetes/client-node';
import { kubernetesOptionsFromEnv } from '../../../control/platform/kubernetes/options.js';
import { validateManifest } from '../../helpers/kube-models.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const KUBECTL = process.env.KUBECTL ?? 'kubectl';

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [k: string]: any };

const rendered = new Map<string, Promise<Obj[]>>();
function render(overlay: 'local' | 'prod'): Promise<Obj[]> {
  if (!rendered.has(overlay))
    rendered.set(
      overlay,
      run(KUBECTL, ['kustomize', `knative/overlays/${overlay}`], { cwd: ROOT, maxBuffer: 16 << 20 }).then(({ stdout }) =>
        parseAllDocuments(stdout).map((d) => d.toJS() as Obj),
      ),
    );
  return rendered.get(overlay)!;
}

const find = (objs: Obj[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind} ${name} not rendered`);
  return o;
};
const podSpecOf = (o: Obj) => o.spec.template.spec;
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition']);

for (const overlay of ['local', 'prod'] as const) {
  test(`the ${overlay} overlay renders and every object validates against its schema`, async (t) => {
    const objs = await render(overlay);
    t.true(objs.length > 15);
    for (const o of objs) t.notThrows(() => validateManifest(o), `${o.kind} ${o.metadata.name}`);
  });

  test(`every namespaced object of the ${overlay} overlay lives in the cornserve namespace`, async (t) => {
    for (const o of await render(overlay))
      if (!CLUSTER_SCOPED.has(o.kind)) t.is(o.metadata.namespace, 'cornserve', `${o.kind} ${o.metadata.name}`);
  });

  test(`the ${overlay} overlay's cornserve-config parses as Kubernetes platform options`, async (t) => {
    const data = find(await render(overlay), 'ConfigMap', 'cornserve-config').data as Record<string, string>;
    const o = kubernetesOptionsFromEnv(data, new KubeConfig());
    t.is(o.namespace, 'cornserve');
    t.is(o.dispatcherUrl, 'http://dispatcher.cornserve.svc.cluster.local:8000');
    t.is(String(o.sidecarPort), find(await render(overlay), 'DaemonSet', 'sidecar').spec.template.spec.containers[0].ports[0].containerPort.toString());
  });

  test(`the ${overlay} overlay tags control-plane images like the executors it will start`, async (t) => {
    const objs = await render(overlay);
    const tag = find(objs, 'ConfigMap', 'cornserve-config').data.CORNSERVE_IMAGE_TAG;
    for (const o of objs.filter((x) => x.spec?.template?.spec?.containers))
      for (const c of podSpecOf(o).containers)
        if (c.image.includes('/cornserve/')) t.is(c.image, `docker.io/cornserve/control-plane:${tag}`, `${o.kind} ${o.metadata.name}`);
  });

  test(`every workload of the ${overlay} overlay runs under a service account the overlay defines`, async (t) => {
    const objs = await render(overlay);
    const accounts = new Set(objs.filter((o) => o.kind === 'ServiceAccount').map((o) => o.metadata.name));
    for (const o of objs.filter((x) => x.kind === 'Deployment' || x.kind === 'DaemonSet'))
      t.true(accounts.has(podSpecOf(o).serviceAccountName), `${o.kind} ${o.metadata.name}`);
    for (const name of ['cornserve-executor', 'cornserve-app-function']) t.true(accounts.has(name), name);
  });
}

test('the local overlay runs Redis in the cluster and exposes the gateway on NodePort 30080', async (t) => {
  const objs = await render('local');
  t.is(find(objs, 'Deployment', 'redis').spec.replicas, 1);
  t.is(find(objs, 'ConfigMap', 'cornserve-config').data.CORNSERVE_STORE_URL, 'redis://redis.cornserve.svc.cluster.local:6379');
  t.like(find(objs, 'Service', 'gateway').spec, { type: 'NodePort', ports: [{ nodePort: 30080 }] });
});

test('the local overlay never pulls images and provides a development admin token', async (t) => {
  const objs = await render('local');
  for (const o of objs.filter((x) => x.metadata.labels?.['app.kubernetes.io/component'] === 'control-plane' || x.kind === 'DaemonSet'))
    t.is(podSpecOf(o).containers[0].imagePullPolicy, 'Never', o.metadata.name);
  t.is(find(objs, 'ConfigMap', 'cornserve-config').data.CORNSERVE_IMAGE_PULL_POLICY, 'Never');
  const secretRef = podSpecOf(find(objs, 'Deployment', 'gateway')).containers[0].env.find((e: any) => e.name === 'CORNSERVE_ADMIN_TOKEN').valueFrom.secretKeyRef;
  t.truthy(objs.find((o) => o.kind === 'Secret' && o.metadata.name === secretRef.name));
});

test('the prod overlay uses an external Redis and leaves the admin Secret to the operator', async (t) => {
  const objs = await render('prod');
  t.false(objs.some((o) => o.metadata.name === 'redis'));
  t.not(find(objs, 'ConfigMap', 'cornserve-config').data.CORNSERVE_STORE_URL, 'redis://redis.cornserve.svc.cluster.local:6379');
  t.false(objs.some((o) => o.kind === 'Secret'));
  t.is(find(objs, 'Service', 'gateway').spec.type, 'ClusterIP');
});

test('several dispatcher replicas run behind one Service', async (t) => {
  for (const overlay of ['local', 'prod'] as const) {
    const objs = await render(overlay);
    t.true(find(objs, 'Deployment', 'dispatcher').spec.replicas >= 2, overlay);
    t.deepEqual(find(objs, 'Service', 'dispatcher').spec.selector, { 'app.kubernetes.io/name': 'dispatcher' });
  }
});

test('a sidecar runs on every GPU node with host IPC, host networking and /dev/shm', async (t) => {
  const spec = podSpecOf(find(await render('prod'), 'DaemonSet', 'sidecar'));
  t.true(spec.hostIPC);
  t.true(spec.hostNetwork);
  t.deepEqual(spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms, [
    { matchExpressions: [{ key: 'nvidia.com/gpu.present', operator: 'In', values: ['true'] }] },
  ]);
  t.true(spec.tolerations.some((x: any) => x.key === 'nvidia.com/gpu'));
  t.deepEqual(spec.volumes, [{ name: 'dshm', hostPath: { path: '/dev/shm', type: 'Directory' } }]);
  t.deepEqual(spec.containers[0].args, ['control/platform/kubernetes/sidecar-main.ts']);
});

/** Rules bound to a service account, by binding kind. */
function rulesOf(objs: Obj[], account: string) {
  const bindings = objs.filter(
    (o) => (o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding') && o.subjects.some((s: any) => s.kind === 'ServiceAccount' && s.name === account),
  );
  return bindings.map((b) => ({
    scope: b.kind === 'ClusterRoleBinding' ? 'cluster' : 'namespace',
    rules: find(objs, b.roleRef.kind, b.roleRef.name).rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>,
  }));
}

test('the resource manager manages executors and app functions in its namespace and lists nodes cluster-wide', async (t) => {
  const bound = rulesOf(await render('prod'), 'cornserve-resource-manager');
  const cluster = bound.filter((b) => b.scope === 'cluster').flatMap((b) => b.rules);
  t.deepEqual(cluster, [{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] }]);
  const ns = bound.filter((b) => b.scope === 'namespace').flatMap((b) => b.rules);
  const can = (group: string, resource: string, verb: string) =>
    ns.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));
  for (const [group, resource] of [['apps', 'deployments'], ['', 'services'], ['', 'configmaps'], ['serving.knative.dev', 'services']])
    for (const verb of ['get', 'list', 'watch', 'patch', 'delete']) t.true(can(group!, resource!, verb), `${group}/${resource} ${verb}`);
  t.true(can('', 'pods', 'delete'));
  t.false(ns.some((r) => r.verbs.includes('*') || r.resources.includes('*') || r.resources.includes('secrets')));
});

test('the resource manager may write the task registry custom resources', async (t) => {
  const ns = rulesOf(await render('prod'), 'cornserve-resource-manager').filter((b) => b.scope === 'namespace').flatMap((b) => b.rules);
  for (const resource of ['taskdefinitions', 'executiondescriptors'])
    for (const verb of ['get', 'list', 'patch', 'delete'])
      t.true(ns.some((r) => r.apiGroups.includes('cornserve.ai') && r.resources.includes(resource) && r.verbs.includes(verb)), `${resource} ${verb}`);
});

for (const overlay of ['local', 'prod'] as const)
  test(`the ${overlay} overlay defines the namespaced cornserve.ai/v1 TaskDefinition and ExecutionDescriptor kinds`, async (t) => {
    const objs = await render(overlay);
    const td = find(objs, 'CustomResourceDefinition', 'taskdefinitions.cornserve.ai').spec;
    t.like(td, { group: 'cornserve.ai', scope: 'Namespaced', names: { kind: 'TaskDefinition', plural: 'taskdefinitions' } });
    t.deepEqual(td.versions.map((v: any) => v.name), ['v1']);
    t.deepEqual(td.versions[0].additionalPrinterColumns.map((c: any) => c.name), ['Class', 'Descriptor', 'Age'], 'kubectl get columns (NAME comes first by itself)');
    const ed = find(objs, 'CustomResourceDefinition', 'executiondescriptors.cornserve.ai').spec;
    t.like(ed, { group: 'cornserve.ai', scope: 'Namespaced', names: { kind: 'ExecutionDescriptor', plural: 'executiondescriptors' } });
  });

test('the gateway may only read Knative Services', async (t) => {
  const rules = rulesOf(await render('prod'), 'cornserve-gateway');
  t.deepEqual(rules, [{ scope: 'namespace', rules: [{ apiGroups: ['serving.knative.dev'], resources: ['services'], verbs: ['get', 'list', 'watch'] }] }]);
});

test('sidecars may only read nodes (to learn their ranks and peers)', async (t) => {
  t.deepEqual(rulesOf(await render('prod'), 'cornserve-sidecar'), [{ scope: 'cluster', rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list'] }] }]);
});

test('the dispatcher, executors and app functions get no API access and no token', async (t) => {
  const objs = await render('prod');
  for (const account of ['cornserve-dispatcher', 'cornserve-executor', 'cornserve-app-function']) {
    t.deepEqual(rulesOf(objs, account), [], account);
    t.is(find(objs, 'ServiceAccount', account).automountServiceAccountToken, false, account);
  }
});
