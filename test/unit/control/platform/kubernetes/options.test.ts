import test from 'ava';
import { KubeConfig } from '@kubernetes/client-node';
import { kubernetesOptionsFromEnv, manifestOptionsFromEnv } from '../../../../../control/platform/kubernetes/options.js';
import { renderAppManifests } from '../../../../../control/platform/kubernetes/manifests.js';

const kc = new KubeConfig();

test('options come from the environment variable names the ConfigMap sets', (t) => {
  const o = kubernetesOptionsFromEnv(
    {
      CORNSERVE_NAMESPACE: 'team-a',
      CORNSERVE_IMAGE_PREFIX: 'registry.local:5000',
      CORNSERVE_IMAGE_TAG: 'v2',
      CORNSERVE_IMAGE_PULL_POLICY: 'Always',
      CORNSERVE_STORE_URL: 'redis://redis:6379',
      CORNSERVE_DISPATCHER_URL: 'http://dispatcher:8000',
      CORNSERVE_APP_MAX_SCALE: '3',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4317',
      HOME: '/root',
    },
    kc,
  );
  t.like(o, {
    namespace: 'team-a',
    imagePrefix: 'registry.local:5000',
    imageTag: 'v2',
    imagePullPolicy: 'Always',
    storeUrl: 'redis://redis:6379',
    dispatcherUrl: 'http://dispatcher:8000',
    autoscaling: { target: 8, minScale: 0, maxScale: 3 },
    passEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4317' },
    deviceResource: 'nvidia.com/gpu',
  });
});

test('a bad value is refused naming the variable', (t) => {
  t.throws(() => kubernetesOptionsFromEnv({ CORNSERVE_IMAGE_PULL_POLICY: 'Sometimes' }, kc), { message: /CORNSERVE_IMAGE_PULL_POLICY/ });
});

test('an empty environment gives the documented defaults', (t) => {
  t.like(kubernetesOptionsFromEnv({}, kc), { namespace: 'cornserve', imagePrefix: 'docker.io', imageTag: 'latest', onShutdown: 'detach' });
});

test('manifests rendered with options from the environment use its registry, tag and dispatcher', (t) => {
  const yaml = renderAppManifests('echo', 'x', manifestOptionsFromEnv({ CORNSERVE_IMAGE_PREFIX: 'localhost:5000', CORNSERVE_IMAGE_TAG: 'dev', CORNSERVE_DISPATCHER_URL: 'http://d:8000' }));
  t.regex(yaml, /image: localhost:5000\/cornserve\/app-runtime:dev\n/);
  t.regex(yaml, /name: CORNSERVE_DISPATCHER_URL\n\s+value: http:\/\/d:8000\n/);
});

test('CORNSERVE_MODELS_PVC or CORNSERVE_MODELS_HOST_PATH choose the models volume; both at once are refused', (t) => {
  t.deepEqual(manifestOptionsFromEnv({ CORNSERVE_MODELS_PVC: 'hf-models' }).modelsVolume, { pvc: 'hf-models' });
  t.deepEqual(manifestOptionsFromEnv({ CORNSERVE_MODELS_HOST_PATH: '/data/models' }).modelsVolume, { hostPath: '/data/models' });
  t.throws(() => manifestOptionsFromEnv({ CORNSERVE_MODELS_PVC: 'a', CORNSERVE_MODELS_HOST_PATH: '/b' }), { message: /not both/ });
  t.throws(() => manifestOptionsFromEnv({ CORNSERVE_MODELS_HOST_PATH: 'relative' }), { message: /CORNSERVE_MODELS_HOST_PATH/ });
});
