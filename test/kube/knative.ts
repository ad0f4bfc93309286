/**
 * A Knative Serving stand-in (test infrastructure; no Knative binary is available offline): the
 * `services.serving.knative.dev` CRD with a structural schema, and a reconciler that turns each Knative Service
 * into what Knative would run for its latest revision: a Deployment `<name>-<generation:5>-deployment` (the
 * template's pod with Knative's env PORT=8080, K_SERVICE, K_CONFIGURATION, K_REVISION; owned by the Service,
 * so the real garbage collector removes it) and a Service `<name>` (port 80 → 8080). It reports the Service
 * Ready (with its cluster-local URL) once a pod of the revision is ready, and Ready=False when its pod is stuck.
 * Not modelled: request routing, traffic splits and the autoscaler (revisions keep one pod).
 */
import { ApiextensionsV1Api, AppsV1Api, CoreV1Api, CustomObjectsApi, Watch, type KubeConfig, type V1Deployment } from '@kubernetes/client-node';
import { sleep, waitUntil } from '../../lib/wait.js';
import { podStuck } from '../../control/platform/kubernetes/pod-status.js';

const GROUP = 'serving.knative.dev';
const PORT = 8080;
const open = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } as const;

/** The CRD, with the part of Knative's schema the platform writes spelled out (the rest preserved as given). */
export const KNATIVE_SERVICE_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `services.${GROUP}` },
  spec: {
    group: GROUP,
    names: { kind: 'Service', plural: 'services', singular: 'service', shortNames: ['ksvc', 'kservice'], categories: ['all', 'knative', 'serving'] },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: {
                  template: {
                    type: 'object',
                    properties: {
                      metadata: open,
                      spec: {
                        type: 'object',
                        'x-kubernetes-preserve-unknown-fields': true,
                        properties: {
                          containers: { type: 'array', items: open },
                          volumes: { type: 'array', items: open },
                          serviceAccountName: { type: 'string' },
                          timeoutSeconds: { type: 'integer', format: 'int64' },
                          containerConcurrency: { type: 'integer', format: 'int64' },
                        },
                      },
                    },
                  },
                  traffic: { type: 'array', items: open },
                },
              },
              status: open,
            },
          },
        },
      },
    ],
  },
};

interface KnativeService {
  metadata: { name: string; namespace: string; uid: string; generation?: number; deletionTimestamp?: unknown };
  spec: { template: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: any } };
  status?: { observedGeneration?: number };
}

export interface KnativeStandIn {
  stop(): void;
}

/** Registers the CRD (idempotent) and waits until the API server serves it. */
export async function installKnativeCrd(kc: KubeConfig): Promise<void> {
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  await ext.createCustomResourceDefinition({ body: KNATIVE_SERVICE_CRD as any }).catch((e) => {
    if ((e as { code?: number }).code !== 409) throw e;
  });
  await waitUntil('the Knative Service CRD established', async () => {
    const crd = await ext.readCustomResourceDefinition({ name: KNATIVE_SERVICE_CRD.metadata.name });
    return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
  }, { timeoutMs: 30_000, intervalMs: 100 });
}

/** Starts reconciling the Knative Services of `namespace`. */
export async function startKnativeStandIn(kc: KubeConfig, namespace: string): Promise<KnativeStandIn> {
  await installKnativeCrd(kc);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const appsApi = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  let stopped = false;
  let abort: AbortController | undefined;
  const busy = new Map<string, Promise<void>>();

  const setStatus = async (ksvc: KnativeService, ready: { status: 'True' | 'False' | 'Unknown'; reason?: string; message?: string }) => {
    const now = new Date().toISOString();
    // Status writes need the current resourceVersion (custom resources allow no unconditional update).
    const current = (await custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace, plural: 'services', name: ksvc.metadata.name })) as KnativeService;
    if (current.metadata.uid !== ksvc.metadata.uid || current.metadata.generation !== ksvc.metadata.generation) return;
    const body = {
      ...current,
      status: {
        observedGeneration: ksvc.metadata.generation,
        url: `http://${ksvc.metadata.name}.${namespace}.svc.cluster.local`,
        latestCreatedRevisionName: revisionName(ksvc),
        ...(ready.status === 'True' ? { latestReadyRevisionName: revisionName(ksvc) } : {}),
        conditions: ['Ready', 'ConfigurationsReady', 'RoutesReady'].map((type) => ({ type, lastTransitionTime: now, ...ready })),
      },
    };
    await custom.replaceNamespacedCustomObjectStatus({ group: GROUP, version: 'v1', namespace, plural: 'services', name: ksvc.metadata.name, body });
  };

  const reconcile = async (ksvc: KnativeService) => {
    const name = ksvc.metadata.name;
    const revision = revisionName(ksvc);
    const owner = { apiVersion: `${GROUP}/v1`, kind: 'Service', name, uid: ksvc.metadata.uid, controller: true, blockOwnerDeletion: true };
    const labels = { ...ksvc.spec.template.metadata?.labels, [`${GROUP}/service`]: name, [`${GROUP}/configuration`]: name, [`${GROUP}/revision`]: revision };
    const podSpec = structuredClone(ksvc.spec.template.spec);
    delete podSpec.timeoutSeconds;
    delete podSpec.containerConcurrency;
    for (const c of podSpec.containers ?? []) {
      const knativeEnv = [
        { name: 'PORT', value: String(PORT) },
        { name: 'K_SERVICE', value: name },
        { name: 'K_CONFIGURATION', value: name },
        { name: 'K_REVISION', value: revision },
      ];
      c.env = [...(c.env ?? []).filter((e: { name: string }) => !knativeEnv.some((k) => k.name === e.name)), ...knativeEnv];
      c.ports = [{ name: 'user-port', containerPort: PORT, protocol: 'TCP' }];
      if (c.readinessProbe?.httpGet) c.readinessProbe = { ...c.readinessProbe, httpGet: { ...c.readinessProbe.httpGet, port: PORT }, periodSeconds: 1 };
    }
    const deployment: V1Deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: `${revision}-deployment`, namespace, labels, ownerReferences: [owner] },
      spec: {
        replicas: 1,
        selector: { matchLabels: { [`${GROUP}/revision`]: revision } },
        template: { metadata: { labels, annotations: ksvc.spec.template.metadata?.annotations ?? {} }, spec: podSpec },
      },
    };
    await appsApi.createNamespacedDeployment({ namespace, body: deployment }).catch((e) => {
      if ((e as { code?: number }).code !== 409) throw e;
    });
    await core
      .createNamespacedService({
        namespace,
        body: {
          metadata: { name, namespace, labels: { [`${GROUP}/service`]: name }, ownerReferences: [owner] },
          spec: { selector: { [`${GROUP}/service`]: name }, ports: [{ name: 'http', port: 80, targetPort: PORT as any, protocol: 'TCP' }] },
        },
      })
      .catch((e) => {
        if ((e as { code?: number }).code !== 409) throw e;
      });
    // Ready when a pod of this revision is ready; Ready=False as soon as one is stuck (Knative's RevisionFailed).
    for (;;) {
      if (stopped) return;
      const pods = await core.listNamespacedPod({ namespace, labelSelector: `${GROUP}/revision=${revision}` });
      const stuck = pods.items.map((p) => podStuck(p as any)).find(Boolean);
      if (stuck) return setStatus(ksvc, { status: 'False', reason: 'RevisionFailed', message: `Revision "${revision}" failed: ${stuck}` });
      if (pods.items.some((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')))
        return setStatus(ksvc, { status: 'True' });
      await sleep(200);
    }
  };

  const onService = (ksvc: KnativeService) => {
    const key = `${ksvc.metadata.name}/${ksvc.metadata.generation}`;
    if (ksvc.metadata.deletionTimestamp || busy.has(key) || (ksvc.status?.observedGeneration ?? 0) >= (ksvc.metadata.generation ?? 1)) return;
    busy.set(key, reconcile(ksvc).catch((err) => {
      process.stderr.write(`[knative-stand-in] ${ksvc.metadata.name}: ${(err as Error).message}\n`);
    }));
  };

  const watch = async (): Promise<void> => {
    if (stopped) return;
    abort = await new Watch(kc).watch(
      `/apis/${GROUP}/v1/namespaces/${namespace}/services`,
      {},
      (type, obj: KnativeService) => {
        if (type === 'ADDED' || type === 'MODIFIED') onService(obj);
      },
      () => void sleep(300).then(() => watch().catch(() => sleep(1000).then(watch))),
    );
  };
  await watch();
  return {
    stop() {
      stopped = true;
      abort?.abort();
    },
  };
}

const revisionName = (ksvc: KnativeService) => `${ksvc.metadata.name}-${String(ksvc.metadata.generation ?? 1).padStart(5, '0')}`;
