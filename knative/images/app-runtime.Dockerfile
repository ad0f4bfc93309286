# syntax=docker/dockerfile:1.7
# App-function runtime: what every app's Knative Service runs. It reads the app's TypeScript source from
# $CORNSERVE_APP_SOURCE (a read-only ConfigMap mount), transpiles it (esbuild) into a writable temp dir,
# serves POST /invoke and GET /health on $PORT (set by Knative), and sends task graphs to
# $CORNSERVE_DISPATCHER_URL as CloudEvents. User code never runs in the control-plane image.
# Build from the repository root:
#   docker build -f knative/images/app-runtime.Dockerfile -t docker.io/cornserve/app-runtime:latest .
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV ONNXRUNTIME_NODE_INSTALL=skip
COPY package.json package-lock.json ./
# --ignore-scripts: app functions need no sidecar addon (the package's install script) and no ORT binaries.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 # App functions never load models or the Kubernetes client: keep the image small.
 && rm -rf node_modules/onnxruntime-node node_modules/onnxruntime-common node_modules/@kubernetes \
           node_modules/sharp node_modules/@img node_modules/zeromq

FROM ${NODE_IMAGE}
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app/node_modules node_modules
COPY package.json tsconfig.json ./
COPY lib lib
COPY functions functions
USER node
EXPOSE 8080
ENTRYPOINT ["node", "--import", "tsx", "functions/runtime/main.ts"]
