/**
 * Which llama.cpp binaries a GGUF executor tries, in order, for its `--gpu` choice and the devices the platform
 * assigned it. `auto` follows the devices: CUDA devices → the CUDA build, and the Vulkan build when the CUDA one
 * does not load (a node with the NVIDIA driver but without the CUDA 12 runtime libraries still has the driver's
 * Vulkan ICD); no GPU devices → the CPU build. An explicit choice is tried alone: asking for a GPU never ends on
 * the CPU silently.
 */
export type GgufBinary = 'cpu' | 'cuda' | 'vulkan';

export function ggufBinaryOrder(choice: GgufBinary | 'auto', deviceKind: string | undefined): GgufBinary[] {
  if (choice !== 'auto') return [choice];
  return deviceKind === 'cuda' ? ['cuda', 'vulkan'] : ['cpu'];
}
