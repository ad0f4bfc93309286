/**
 * GraphBuilder: writes ONNX graphs (IR 9, opset 21) from TypeScript. Values are referred to by name (string);
 * each helper adds one node and returns the name of its output. Initializers come from typed arrays.
 * Output bytes are a pure function of the calls made, so the same seed gives a byte-identical file.
 */
import { AttributeType, DataType, IR_VERSION, ModelProto, OPSET, type DataTypeName } from './schema.js';

export type Dim = number | string;

/** An attribute value, tagged so an integral float (alpha = 1.0) is not written as an int. */
export type Attr =
  | { f: number }
  | { i: number }
  | { s: string }
  | { ints: readonly number[] }
  | { floats: readonly number[] }
  | { graph: GraphBuilder };

export const attr = {
  f: (f: number): Attr => ({ f }),
  i: (i: number): Attr => ({ i }),
  s: (s: string): Attr => ({ s }),
  ints: (ints: readonly number[]): Attr => ({ ints }),
  floats: (floats: readonly number[]): Attr => ({ floats }),
  graph: (graph: GraphBuilder): Attr => ({ graph }),
};

type TensorData = Float32Array | BigInt64Array | Int32Array | Uint8Array;

interface ValueInfo { name: string; dtype: DataTypeName; shape: readonly Dim[] }

function encodeAttr(name: string, a: Attr): Record<string, unknown> {
  if ('f' in a) return { name, type: AttributeType.FLOAT, f: a.f };
  if ('i' in a) return { name, type: AttributeType.INT, i: a.i };
  if ('s' in a) return { name, type: AttributeType.STRING, s: Buffer.from(a.s, 'utf8') };
  if ('ints' in a) return { name, type: AttributeType.INTS, ints: [...a.ints] };
  if ('graph' in a) return { name, type: AttributeType.GRAPH, g: a.graph.toGraph() };
  return { name, type: AttributeType.FLOATS, floats: [...a.floats] };
}

function dtypeOf(data: TensorData): DataTypeName {
  if (data instanceof Float32Array) return 'FLOAT';
  if (data instanceof BigInt64Array) return 'INT64';
  if (data instanceof Int32Array) return 'INT32';
  return 'UINT8';
}

function valueInfo(v: ValueInfo): Record<string, unknown> {
  return {
    name: v.name,
    type: {
      tensor_type: {
        elem_type: DataType[v.dtype],
        shape: { dim: v.shape.map((d) => (typeof d === 'number' ? { dim_value: d } : { dim_param: d })) },
      },
    },
  };
}

export class GraphBuilder {
  private readonly nodes: Record<string, unknown>[] = [];
  private readonly initializers: Record<string, unknown>[] = [];
  private readonly inputs: ValueInfo[] = [];
  private readonly outputs: ValueInfo[] = [];
  private readonly used: Set<string>;
  private readonly names: { counter: number };
  private paramBytes = 0;
  /** Initializer name → its data: a second call with the same array (a weight both If branches use) is one initializer. */
  private readonly initData = new Map<string, TensorData>();

  /**
   * `parent`: this graph is a subgraph (an If branch) of it. Value names are unique across the whole model,
   * and initializers live in the outermost graph, where every branch reads them (one copy of shared weights,
   * as Optimum's merged decoders keep them).
   */
  constructor(readonly name: string, private readonly parent?: GraphBuilder) {
    this.used = parent ? parent.used : new Set<string>();
    this.names = parent ? parent.names : { counter: 0 };
  }

  /** An unused value name with a readable prefix (claimed when a node or initializer takes it). */
  fresh(prefix: string): string {
    let n: string;
    do n = `${prefix}_${this.names.counter++}`; while (this.used.has(n));
    return n;
  }

  private claim(name: string): string {
    if (this.used.has(name)) throw new Error(`graph ${this.name}: value name '${name}' used twice`);
    this.used.add(name);
    return name;
  }

  /** The outermost graph (where initializers are stored). */
  private get root(): GraphBuilder {
    return this.parent ? this.parent.root : this;
  }

  /** A subgraph whose nodes may read this graph's values (an If or Loop body). */
  subgraph(name: string): GraphBuilder {
    return new GraphBuilder(name, this);
  }

  input(name: string, dtype: DataTypeName, shape: readonly Dim[]): string {
    this.inputs.push({ name: this.claim(name), dtype, shape });
    return name;
  }

  /** Declares graph output `name` as the value `value` (an Identity node is added when the names differ). */
  output(value: string, name: string, dtype: DataTypeName, shape: readonly Dim[]): void {
    if (value !== name) this.node('Identity', [value], {}, [this.claim(name)]);
    this.outputs.push({ name, dtype, shape });
  }

  initializer(name: string, data: TensorData, dims: readonly number[]): string {
    if (this.parent) return this.root.initializer(name, data, dims);
    if (this.initData.get(name) === data) return name;
    const count = dims.reduce((a, b) => a * b, 1);
    if (count !== data.length) throw new Error(`initializer ${name}: ${data.length} values for dims [${dims}]`);
    const raw = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    this.initializers.push({ name: this.claim(name), dims: [...dims], data_type: DataType[dtypeOf(data)], raw_data: raw.slice() });
    this.initData.set(name, data);
    this.paramBytes += data.byteLength;
    return name;
  }

  constF(values: readonly number[] | Float32Array, dims: readonly number[] = [values.length]): string {
    return this.initializer(this.fresh('const_f'), Float32Array.from(values), dims);
  }

  constI64(values: readonly number[], dims: readonly number[] = [values.length]): string {
    return this.initializer(this.fresh('const_i'), BigInt64Array.from(values.map((v) => BigInt(v))), dims);
  }

  /** Adds one node; returns its output names (fresh ones unless given). */
  node(op: string, inputs: readonly string[], attrs: Record<string, Attr> = {}, outputs?: readonly string[], nOut = 1): string[] {
    const outs = outputs ? [...outputs] : Array.from({ length: nOut }, () => this.claim(this.fresh(op.toLowerCase())));
    this.nodes.push({
      op_type: op,
      name: `${op}_${this.nodes.length}`,
      input: [...inputs],
      output: outs,
      attribute: Object.entries(attrs).map(([k, v]) => encodeAttr(k, v)),
    });
    return outs;
  }

  /** Single-output node. */
  op(op: string, inputs: readonly string[], attrs: Record<string, Attr> = {}): string {
    return this.node(op, inputs, attrs)[0]!;
  }

  // ---- typed helpers -------------------------------------------------------------------------------
  matmul(a: string, b: string) { return this.op('MatMul', [a, b]); }
  add(a: string, b: string) { return this.op('Add', [a, b]); }
  sub(a: string, b: string) { return this.op('Sub', [a, b]); }
  mul(a: string, b: string) { return this.op('Mul', [a, b]); }
  div(a: string, b: string) { return this.op('Div', [a, b]); }
  gemm(a: string, b: string, c: string, transB = false) { return this.op('Gemm', [a, b, c], { transB: attr.i(transB ? 1 : 0) }); }
  sigmoid(x: string) { return this.op('Sigmoid', [x]); }
  tanh(x: string) { return this.op('Tanh', [x]); }
  erf(x: string) { return this.op('Erf', [x]); }
  identity(x: string) { return this.op('Identity', [x]); }
  equal(a: string, b: string) { return this.op('Equal', [a, b]); }
  where(cond: string, a: string, b: string) { return this.op('Where', [cond, a, b]); }
  cast(x: string, to: DataTypeName) { return this.op('Cast', [x], { to: attr.i(DataType[to]) }); }
  /** Exact (erf) GELU, the opset-20 Gelu op. */
  gelu(x: string) { return this.op('Gelu', [x], { approximate: attr.s('none') }); }
  softmax(x: string, axis = -1) { return this.op('Softmax', [x], { axis: attr.i(axis) }); }
  transpose(x: string, perm: readonly number[]) { return this.op('Transpose', [x], { perm: attr.ints(perm) }); }
  /** Reshape with a constant target shape (0 copies the input dim, -1 is inferred). */
  reshape(x: string, shape: readonly number[]) { return this.op('Reshape', [x, this.constI64(shape)]); }
  reshapeTo(x: string, shape: string) { return this.op('Reshape', [x, shape]); }
  unsqueeze(x: string, axes: readonly number[]) { return this.op('Unsqueeze', [x, this.constI64(axes)]); }
  squeeze(x: string, axes: readonly number[]) { return this.op('Squeeze', [x, this.constI64(axes)]); }
  concat(xs: readonly string[], axis: number) { return this.op('Concat', xs, { axis: attr.i(axis) }); }
  gather(x: string, indices: string, axis = 0) { return this.op('Gather', [x, indices], { axis: attr.i(axis) }); }
  shape(x: string, start?: number, end?: number) {
    const a: Record<string, Attr> = {};
    if (start !== undefined) a.start = attr.i(start);
    if (end !== undefined) a.end = attr.i(end);
    return this.op('Shape', [x], a);
  }
  reduceMean(x: string, axes: readonly number[], keepdims = true) {
    return this.op('ReduceMean', [x, this.constI64(axes)], { keepdims: attr.i(keepdims ? 1 : 0) });
  }
  /** Slice with constant starts/ends/axes/steps. */
  slice(x: string, starts: readonly number[], ends: readonly number[], axes: readonly number[], steps?: readonly number[]) {
    const ins = [x, this.constI64(starts), this.constI64(ends), this.constI64(axes)];
    if (steps) ins.push(this.constI64(steps));
    return this.op('Slice', ins);
  }
  /** Slice whose ends come from a runtime int64 tensor. */
  sliceDynamic(x: string, starts: string, ends: string, axes: string) { return this.op('Slice', [x, starts, ends, axes]); }
  layerNorm(x: string, scale: string, bias: string, epsilon = 1e-5, axis = -1) {
    return this.op('LayerNormalization', [x, scale, bias], { axis: attr.i(axis), epsilon: attr.f(epsilon) });
  }
  conv(x: string, w: string, b: string, o: { strides?: number[]; pads?: number[]; dilations?: number[]; group?: number } = {}) {
    return this.op('Conv', [x, w, b], convAttrs(o));
  }
  convTranspose(x: string, w: string, b: string, o: { strides?: number[]; pads?: number[]; outputPadding?: number[] } = {}) {
    const a = convAttrs(o);
    if (o.outputPadding) a.output_padding = attr.ints(o.outputPadding);
    return this.op('ConvTranspose', [x, w, b], a);
  }
  /** Resize to a runtime `sizes` tensor (int64, one entry per axis). */
  resize(x: string, sizes: string, mode: 'nearest' | 'linear' | 'cubic' = 'linear') {
    return this.op('Resize', [x, '', '', sizes], {
      mode: attr.s(mode),
      coordinate_transformation_mode: attr.s(mode === 'nearest' ? 'asymmetric' : 'half_pixel'),
    });
  }

  get parameterBytes(): number { return this.paramBytes; }

  /** The GraphProto object (a subgraph has no inputs of its own: it reads its parent's values). */
  toGraph(): Record<string, unknown> {
    return {
      name: this.name,
      node: this.nodes,
      initializer: this.initializers,
      input: this.inputs.map(valueInfo),
      output: this.outputs.map(valueInfo),
    };
  }

  toModel(docString = ''): Record<string, unknown> {
    return {
      ir_version: IR_VERSION,
      producer_name: 'cornserve-ts',
      producer_version: '1',
      doc_string: docString,
      opset_import: [{ domain: '', version: OPSET }],
      graph: this.toGraph(),
    };
  }

  toBytes(docString = ''): Uint8Array {
    const msg = this.toModel(docString);
    const err = ModelProto.verify(msg);
    if (err) throw new Error(`graph ${this.name}: invalid model: ${err}`);
    return ModelProto.encode(ModelProto.fromObject(msg)).finish();
  }

  /** Declared input/output signatures, for manifests. */
  signature(): { inputs: ValueInfo[]; outputs: ValueInfo[] } {
    return { inputs: [...this.inputs], outputs: [...this.outputs] };
  }
}

function convAttrs(o: { strides?: number[]; pads?: number[]; dilations?: number[]; group?: number }): Record<string, Attr> {
  const a: Record<string, Attr> = {};
  if (o.strides) a.strides = attr.ints(o.strides);
  if (o.pads) a.pads = attr.ints(o.pads);
  if (o.dilations) a.dilations = attr.ints(o.dilations);
  if (o.group !== undefined) a.group = attr.i(o.group);
  return a;
}
