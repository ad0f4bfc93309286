import test from 'ava';
import { KubeConfig } from '@kubernetes/client-node';
import { kubernetesOptionsFromEnv } from '../../../../../control/platform/kubernetes/options.js';

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
