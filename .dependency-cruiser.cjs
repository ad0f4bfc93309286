/**
 * The layers of cornserve-ts and the one direction imports may run between them (docs/architecture.md, "Layers").
 * `make test` runs depcruise with this file (test/unit/layers.test.ts); a new import against the direction fails it.
 *
 *   sdk         functions/sdk/       what apps import (tasks, record and replay, data forwards, errors); imports nothing of the project
 *   contracts   lib/                 what every process speaks: errors, deadlines, ids, descriptor and Store types, wire formats
 *   policies    policies/            pure decisions (allocation, routing pick, wiring, admission, batching, autoscaling, plan search)
 *   components  functions/ executors/ sidecar/ control/* (not control/compose, control/cli)
 *   root        control/compose/     startCornserve and the role composer
 *   tools       bench/ sim/ plan/ experiment/
 *   cli         control/cli/         the command line, over everything
 */
const SDK = '^functions/sdk/';
const CONTRACTS = '^lib/';
const POLICIES = '^policies/';
const COMPONENTS = '^(functions/(?!sdk/)|executors/|sidecar/|knative/)|^control/(?!compose/|cli/)';
const ROOT = '^control/compose/';
const CLI = '^control/cli/';
const TOOLS = '^(bench|sim|plan|experiment)/';

/** A rule forbidding imports from `from` into any of `to`. */
function upward(name, from, to, comment) {
  return { name, severity: 'error', comment, from: { path: from }, to: { path: to } };
}

module.exports = {
  forbidden: [
    {
      name: 'the-sdk-imports-nothing-of-the-project',
      severity: 'error',
      comment: 'apps import functions/sdk from the package; it stands alone',
      from: { path: SDK },
      to: { path: '^(lib|policies|functions|executors|sidecar|control|knative|bench|sim|plan|experiment)/', pathNot: SDK },
    },
    upward('contracts-import-only-contracts', CONTRACTS, [POLICIES, COMPONENTS + '|^functions/(?!sdk/)', ROOT, CLI, TOOLS], 'lib/ is the bottom layer: it imports nothing of the project above it'),
    upward('policies-import-only-contracts', POLICIES, [COMPONENTS, ROOT, CLI, TOOLS], 'a policy is a pure decision over contracts, so the simulator reuses it as is'),
    upward('components-stay-below-the-root', COMPONENTS, [ROOT, CLI, TOOLS], 'components never reach up into the composition root, the tools or the CLI'),
    {
      name: 'executors-and-sidecars-speak-to-the-control-plane-through-contracts',
      severity: 'error',
      comment: "an executor or sidecar process shares only lib/ with the control plane; the sidecar's entry point opens the Store (memory link or Redis) as every process's main does",
      from: { path: '^(executors|sidecar)/', pathNot: '^sidecar/main\\.ts$' },
      to: { path: '^control/' },
    },
    upward('the-sidecar-imports-no-executor', '^sidecar/', ['^executors/'], 'executors are clients of the sidecar'),
    upward('apps-and-tasks-import-only-the-sdk-and-contracts', '^functions/(tasks|client|apps)/', ['^(control|executors|sidecar)/'], 'user code runs apart from the platform'),
    upward('root-stays-below-the-cli', ROOT, [CLI, TOOLS], 'the composition root is started by the CLI, tests and tools; it never imports them'),
    upward('the-simulator-decides-with-the-live-policies', '^sim/(?!fit/)', ['^executors/', '^control/(resources|dispatcher|autoscaler|taskmanager)/'], 'the simulator imports its decisions from policies/ (sim/fit measures real executors and is apart)'),
    upward('tools-never-import-the-cli', TOOLS, [CLI], 'the tools run under the CLI; they never import it'),
    upward('the-load-client-imports-no-other-tool', '^bench/', ['^(sim|plan|experiment)/'], 'bench/ (the load client) is the lowest tool'),
    upward('the-simulator-imports-neither-planner-nor-experiment', '^sim/', ['^(plan|experiment)/'], 'the planner searches with the simulator, not the other way round'),
    upward('the-planner-imports-no-experiment', '^plan/', ['^experiment/'], 'the experiment drives the planner'),
    {
      // Cycles inside one folder are one module's business; a cycle through another folder makes the two one.
      name: 'no-circle-between-folders',
      severity: 'error',
      comment: 'a cycle that leaves its folder; break it by moving the shared part down',
      from: { path: '^(.+)/[^/]+$' },
      to: { circular: true, viaSomeNot: '^$1/[^/]+$' },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      comment: 'an import that resolves to nothing (a moved file whose importers were not rewritten)',
      from: {},
      // cornserve/registry/<name> is a unit task registered at run time (functions/runtime/load.ts resolves it).
      to: { couldNotResolve: true, pathNot: '^cornserve/registry/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|build|\\.models|\\.bench)/' },
    // Type-only imports count: a descriptor type imported from a component is still a dependency on it.
    tsPreCompilationDeps: true,
    // Re-cruise only what changed since the last run (the check runs in every `make test`).
    cache: { folder: 'node_modules/.cache/dependency-cruiser', strategy: 'content' },
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
    reporterOptions: {
      archi: { collapsePattern: '^(node_modules/[^/]+|lib|policies|functions/[^/]+|executors/[^/]+|sidecar|control/[^/]+|bench/[^/]+|sim|plan|experiment)/' },
    },
  },
};
