/**
 * The workload options `cornserve bench` and `cornserve plan` share (arrivals, lengths, synthetic media), declared
 * once: the bench client drives them live, the planner simulates them. Each command gives its own defaults.
 */
import type { Command } from 'commander';

export interface WorkloadDefaults {
  inputLen: string;
  outputLen: string;
  imageSize: string;
  audioSeconds: string;
  videoFrames: string;
}

export function addWorkloadOptions(cmd: Command, d: WorkloadDefaults): Command {
  return cmd
    .option('--burstiness <g>', 'gamma shape of inter-arrival times: 1 = Poisson, < 1 burstier (CV = 1/√g)', '1')
    .option('--pattern <p>', 'rate over time: constant | on-off:PERIOD_S[:FACTOR] (phases at rate·FACTOR and rate/FACTOR, FACTOR 2) | step:R1,R2,…:PERIOD_S', 'constant')
    .option('--seed <n>', 'seed of arrivals, the mix and the synthetic media', '0')
    .option('--input-len <n>', 'prompt length in tokens (characters for the byte-level tiny models)', d.inputLen)
    .option('--output-len <n>', 'max_tokens per request (with ignore_eos: exactly this many)', d.outputLen)
    .option('--range-ratio <r>', 'lengths uniform in [len·(1−r), len·(1+r)]', '0')
    .option('--image-size <WxH>', 'synthetic image (and video frame) size', d.imageSize)
    .option('--audio-seconds <s>', 'synthetic audio length', d.audioSeconds)
    .option('--video-frames <n>', 'synthetic video frames', d.videoFrames);
}
