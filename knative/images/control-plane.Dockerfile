# syntax=docker/dockerfile:1.7
# Control plane: one image for the gateway, resource manager, dispatcher and sidecar. The entrypoint is
# `node --import tsx`; each Deployment names the module to run (knative/base/*.yaml):
#   control/cli/main.ts gateway | control/cli/main.ts resource-manager | control/dispatcher/main.ts |
#   control/platform/kubernetes/sidecar-main.ts
# Build from the repository root:
#   docker build -f knative/images/control-plane.Dockerfile -t docker.io/cornserve/control-plane:latest .
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS deps
# npm ci also builds the sidecar's shared-memory addon (the package's install script, node-gyp): it needs a compiler.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# onnxruntime-node's postinstall would fetch CUDA binaries; the control plane runs no model.
ENV ONNXRUNTIME_NODE_INSTALL=skip
COPY package.json package-lock.json ./
COPY sidecar/native sidecar/native
RUN npm ci --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app/node_modules node_modules
COPY package.json tsconfig.json ./
COPY lib lib
COPY functions functions
COPY control control
COPY sidecar sidecar
COPY --from=deps /app/sidecar/native/build sidecar/native/build
# Executor descriptors are imported by the control plane (launch specs); the executors themselves are separate images.
COPY executors executors
USER node
ENTRYPOINT ["node", "--import", "tsx"]
CMD ["control/cli/main.ts", "--help"]
