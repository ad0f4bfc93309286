# The two commands a newcomer needs: `make run` and `make test`. Each installs what it needs.
SHELL := /bin/bash
NODE := node --import tsx
export ONNXRUNTIME_NODE_INSTALL := skip

.PHONY: all deps redis-server kubectl models run test typecheck layers bench chaos soak experiment gpu-check doctor clean kube-binaries cluster-up test-kubernetes

all: test

# npm ci only when the lock file changed since the last install.
node_modules/.installed: package-lock.json
	npm ci --no-audit --no-fund
	touch $@

# The sidecar's shared-memory addon (mmap of /dev/shm segments as ArrayBuffers). `npm ci` builds it (the
# package's "install" script, sidecar/native/build.mjs, which also finds Node's headers); this rule only
# rebuilds it when its sources change or an install skipped scripts.
ADDON := sidecar/native/build/Release/cornserve_shm.node
$(ADDON): sidecar/native/shm.c sidecar/native/binding.gyp sidecar/native/build.mjs | node_modules/.installed
	npm run --silent build:addon

deps: node_modules/.installed $(ADDON)

# Tests that need Redis start their own redis-server on a free loopback port; install it when missing.
redis-server:
	@command -v redis-server >/dev/null || { \
	  echo "installing redis-server from Debian"; \
	  (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }

# The manifest tests render kustomize overlays offline with kubectl; install Debian's client when missing.
kubectl:
	@command -v kubectl >/dev/null || { \
	  echo "installing kubectl (kubernetes-client) from Debian"; \
	  (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubernetes-client >/dev/null; }

# The project's own small ONNX models (no model hub is reachable); cached by a hash of the builder sources.
models: deps
	$(NODE) executors/models/build.ts

typecheck: deps
	npx tsc --noEmit -p .

# The one-way layers (docs/architecture.md §3), checked by dependency-cruiser; `make test` runs the same check
# (test/unit/layers.test.ts).
LAYER_FOLDERS := lib policies functions executors sidecar control knative bench sim plan experiment examples
layers: deps
	npx depcruise --config .dependency-cruiser.cjs --output-type err-long $(LAYER_FOLDERS)

# kube-apiserver, controller-manager and scheduler 1.20 built from Debian's source (about 8 minutes once; cached
# in ~/.cache/cornserve/kubernetes-1.20.2) plus etcd: the local cluster of test/integration/kubernetes-real.
kube-binaries:
	bash test/kube/build-binaries.sh

# A local cluster with process-kubelet GPU nodes for trying the platform by hand; prints the kubeconfig path.
cluster-up: deps kube-binaries
	$(NODE) test/kube/cluster-up.ts

test: deps redis-server kubectl models typecheck
	bash test/run-tests.sh

# The platform against a real Kubernetes control plane (docs/kubernetes.md); builds the servers once.
test-kubernetes: deps kube-binaries
	bash test/run-tests.sh --config ava.kubernetes.config.mjs

# make run PORT=8080 DEVICES=4: another gateway port (when 8000 is taken) or number of virtual devices.
PORT ?= 8000
DEVICES ?= 12
run: deps models
	$(NODE) control/cli/main.ts up --apps functions/apps --devices $(DEVICES) --port $(PORT)

bench: deps models
	$(NODE) test/bench/main.ts

# Faults under load on `make run`'s platform (docs/reliability.md): a seeded schedule of kills during 2 minutes of
# mixed load (REDIS=1 adds Redis to what is killed), and a 10-minute soak (memory of every process, p99 per minute).
chaos: deps models redis-server
	$(NODE) test/chaos/chaos.ts $(if $(REDIS),--redis,) $(if $(SEED),--seed $(SEED),)

soak: deps models
	$(NODE) test/chaos/soak.ts

# The disaggregation experiment in the simulator (docs/experiment.md); QUICK=1 for the short version.
experiment: deps
	$(NODE) control/cli/main.ts experiment disaggregation $(if $(QUICK),--quick,) --result-dir experiment-results/disaggregation
	$(NODE) control/cli/main.ts experiment reference $(if $(QUICK),--quick,) --result-dir experiment-results/reference

# What this machine has and lacks (GPUs, providers, libraries, Redis, model folders); exit 1 lists the fixes.
doctor: deps
	$(NODE) control/cli/main.ts doctor

# On a machine with NVIDIA GPUs: doctor, then the platform on --devices auto serving an image request and an MLLM chat
# (each executor's provider, tokens/s), within 10 minutes. Without a GPU it says so and exits 0, starting nothing.
gpu-check: deps models
	$(NODE) test/gpu/check.ts

clean:
	rm -rf node_modules build .models .bench
