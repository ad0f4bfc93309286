/**
 * DataForward wiring (reference §2.5): a DataForward in an invocation's OUTPUT is a producer; the same id in
 * a LATER invocation's INPUT is a consumer. The producer's source = its executor's sidecar ranks; its
 * destinations = one rank group per consuming invocation (broadcast). Every copy of the forward (the
 * producer's and each consumer's) gets the same src/dst, so each executor request is self-contained.
 *
 * Forwards are found recursively in arrays and plain objects, as DataForward instances (typed graphs) or
 * as their JSON form (raw graphs). A graph whose forwards do not pair up is rejected before anything runs.
 */
import { DataForward, isDataForwardJSON, type DataForwardJSON, type TaskGraph, type UnitTask } from '../functions/sdk/index.js';
import { GraphInvalidError } from '../lib/dispatch-errors.js';

/** One occurrence of a forward in the graph, and how to fill in its ranks. */
interface ForwardRef {
  readonly id: string;
  setRanks(src: number[], dst: number[][]): void;
}

/** Every DataForward (instance or JSON) inside `value`, depth first, in property order. */
export function findForwards(value: unknown): ForwardRef[] {
  const found: ForwardRef[] = [];
  visit(value, new Set(), found);
  return found;
}

/** findForwards' walk: a function of the module, not a closure made per call (see lib/wait.ts SteppedTimer). */
function visit(v: unknown, seen: Set<object>, found: ForwardRef[]): void {
  if (v === null || typeof v !== 'object' || seen.has(v)) return;
  seen.add(v);
  if (v instanceof DataForward) {
    found.push({ id: v.id, setRanks: (src, dst) => { v.srcSidecarRanks = [...src]; v.dstSidecarRanks = dst.map((g) => [...g]); } });
  } else if (isDataForwardJSON(v)) {
    const json: DataForwardJSON = v;
    found.push({ id: json.id, setRanks: (src, dst) => { json.src_sidecar_ranks = [...src]; json.dst_sidecar_ranks = dst.map((g) => [...g]); } });
  } else if (Array.isArray(v)) {
    for (const x of v) visit(x, seen, found);
  } else if (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null) {
    for (const x of Object.values(v)) visit(x, seen, found);
  }
}

interface Production {
  invocation: number;
  refs: ForwardRef[];
  /** consuming invocation index -> its copies of the forward (Map keeps first-consumption order) */
  consumers: Map<number, ForwardRef[]>;
}

const describe = (i: number, task: UnitTask) => `invocation ${i} (${task.constructor.name} ${task.name})`;

/**
 * Fills in src/dst sidecar ranks of every DataForward in `graph` (mutating its inputs and outputs).
 * `ranksOf(i)` = the sidecar ranks of the executor that runs invocation i.
 * Throws GraphInvalidError (400) listing every forward that does not pair up.
 */
export function wireDataForwards(graph: TaskGraph, ranksOf: (invocationIndex: number) => number[]): void {
  const produced = new Map<string, Production>();
  const problems: string[] = [];
  graph.invocations.forEach((inv, i) => {
    for (const ref of findForwards(inv.input)) {
      const p = produced.get(ref.id);
      if (!p) {
        problems.push(`${describe(i, inv.task)} consumes DataForward ${ref.id}, which no earlier invocation produces`);
        continue;
      }
      const copies = p.consumers.get(i) ?? [];
      copies.push(ref);
      p.consumers.set(i, copies);
    }
    for (const ref of findForwards(inv.output)) {
      const p = produced.get(ref.id);
      if (p) {
        const by = p.invocation === i ? 'this invocation' : describe(p.invocation, graph.invocations[p.invocation]!.task);
        problems.push(`${describe(i, inv.task)} produces DataForward ${ref.id}, which ${by} already produces`);
        continue;
      }
      produced.set(ref.id, { invocation: i, refs: [ref], consumers: new Map() });
    }
  });
  for (const [id, p] of produced) {
    if (p.consumers.size === 0)
      problems.push(`${describe(p.invocation, graph.invocations[p.invocation]!.task)} produces DataForward ${id}, but no later invocation consumes it`);
  }
  if (problems.length > 0) throw new GraphInvalidError(`task graph: ${problems.join('; ')}`, problems);

  for (const p of produced.values()) {
    const src = ranksOf(p.invocation);
    const dst = [...p.consumers.keys()].map(ranksOf);
    for (const ref of [...p.refs, ...[...p.consumers.values()].flat()]) ref.setRanks(src, dst);
  }
}
