// `make test-kubernetes`: the tests against a real Kubernetes control plane (docs/kubernetes.md), which need the
// API server, controller-manager and scheduler built from Debian's source (`make kube-binaries`).
import base from './package.json' with { type: 'json' };

export default { ...base.ava, files: ['test/integration/kubernetes-real/**/*.test.ts'] };
