/**
 * Links between devices: a tensor of `bytes` takes latency + bytes / bandwidth. Presets are nominal
 * per-direction figures (vendor data sheets): NVLink 4 (H100 SXM, 450 GB/s per direction), NVLink 3 (A100,
 * 300 GB/s), PCIe 4 x16 (≈ 25 GB/s usable), Ethernet 100/400 Gb/s (12.5 / 50 GB/s) with a few µs of latency.
 */
export interface Link {
  /** GB/s (1e9 bytes per second). */
  bandwidthGBps: number;
  latencyUs: number;
}

export const LINK_PRESETS: Record<string, Link> = {
  nvlink4: { bandwidthGBps: 450, latencyUs: 2 },
  nvlink3: { bandwidthGBps: 300, latencyUs: 2 },
  pcie4: { bandwidthGBps: 25, latencyUs: 5 },
  '100gbe': { bandwidthGBps: 12.5, latencyUs: 10 },
  '400gbe': { bandwidthGBps: 50, latencyUs: 8 },
  /** This machine's shared-memory sidecar path (one node, no device): memory bandwidth, a little latency. */
  local: { bandwidthGBps: 5, latencyUs: 50 },
};

export const transferMs = (link: Link, bytes: number): number => link.latencyUs / 1000 + bytes / (link.bandwidthGBps * 1e6);
