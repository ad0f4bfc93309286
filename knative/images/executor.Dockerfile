# syntax=docker/dockerfile:1.7
# Executors: one image per executor kind, named after LaunchSpec.image (cornserve/echo, cornserve/eric,
# cornserve/geri, cornserve/llm). The platform runs it with the launch spec's args and the EXECUTOR_ENV
# variables (PORT, CORNSERVE_SIDECAR_RANKS, CORNSERVE_SIDECAR_URL, ...), nvidia.com/gpu limits and /dev/shm.
# GPU by default: a CUDA 12 + cuDNN base image, and onnxruntime-node's CUDA execution provider installed at build
# time through its documented install flag (ONNXRUNTIME_NODE_INSTALL=cuda12, i.e. --onnxruntime-node-install=cuda12).
# The build fails if the provider's libraries are not beside the onnxruntime binding (executors/models/provider-check.ts,
# the same check the executors run at start before their GPU probe), so a pod never starts an executor that would
# refuse its GPUs (docs/gpus.md). Build from the repository root, e.g.:
#   docker build -f knative/images/executor.Dockerfile --build-arg EXECUTOR=eric -t docker.io/cornserve/eric:latest .
# CPU-only image (echo, or clusters without GPUs):
#   docker build -f knative/images/executor.Dockerfile --build-arg EXECUTOR=echo --build-arg ORT_CUDA=skip \
#     --build-arg NODE_IMAGE=node:20-bookworm-slim -t docker.io/cornserve/echo:latest .
# With a CUDA base image, Node 20 is installed from the official tarball (the CUDA images carry no Node).
ARG NODE_IMAGE=nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04

FROM ${NODE_IMAGE} AS base
ARG NODE_VERSION=20.20.2
RUN if ! command -v node >/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends ca-certificates curl xz-utils \
      && curl -fsSL https://nodejs.org/dist/v${NODE_VERSION}/node-v${NODE_VERSION}-linux-x64.tar.xz | tar -xJ -C /usr/local --strip-components=1 \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
 && (id node >/dev/null 2>&1 || useradd --uid 1000 --create-home node)

FROM base AS deps
# npm ci also builds the sidecar's shared-memory addon (the package's install script, node-gyp): it needs a compiler.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# cuda12: onnxruntime-node's install script fetches its CUDA 12 execution provider (and TensorRT's);
# skip: the bundled CPU provider only.
ARG ORT_CUDA=cuda12
ENV ONNXRUNTIME_NODE_INSTALL=${ORT_CUDA}
COPY package.json package-lock.json ./
COPY sidecar/native sidecar/native
# Files only: a build has no GPU to probe (the executor probes a session on its device at start).
COPY executors/models/providers.ts executors/models/provider-check.ts executors/models/
RUN npm ci --omit=dev --no-audit --no-fund \
 && if [ "$ORT_CUDA" != skip ]; then node --import tsx executors/models/provider-check.ts cuda; fi

FROM deps AS models
# The project's own small models (deterministic weights), baked into the image; mount real exported models
# over /models (CORNSERVE_MODELS_DIR) to serve those instead.
COPY lib lib
COPY functions functions
COPY control control
COPY executors executors
COPY tsconfig.json ./
RUN node --import tsx executors/models/build.ts --out /models

FROM base
ARG EXECUTOR=echo
WORKDIR /app
ENV NODE_ENV=production CORNSERVE_EXECUTOR=${EXECUTOR} CORNSERVE_MODELS_DIR=/models HOST=0.0.0.0
COPY --from=deps /app/node_modules node_modules
COPY package.json tsconfig.json ./
COPY lib lib
COPY functions functions
COPY control control
COPY sidecar sidecar
COPY executors executors
COPY --from=deps /app/sidecar/native/build sidecar/native/build
COPY --from=models /models /models
USER node
EXPOSE 8000
# exec: the executor is PID 1 and gets SIGTERM directly (drain, then exit within the grace period).
ENTRYPOINT ["/bin/sh", "-c", "exec node --import tsx executors/$CORNSERVE_EXECUTOR/main.ts \"$@\"", "--"]
