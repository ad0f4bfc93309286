/**
 * The tensor-parallel part of a launch, shared by the Eric and LLM descriptors: a degree N > 1 adds
 * `--tp-size N` to the executor's arguments and asks for N colocated devices (the executor runs one rank each).
 */
export function tensorParallelLaunch(degree: number | undefined): { args: string[]; devicesPerExecutor: number } {
  const tp = degree ?? 1;
  return { args: tp > 1 ? ['--tp-size', String(tp)] : [], devicesPerExecutor: tp };
}
