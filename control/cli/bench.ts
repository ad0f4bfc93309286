/**
 * The `cornserve bench` command's options and help. The work is in bench/ (loaded only when the command runs,
 * so other commands do not pay for vega and the HTTP senders).
 */
import { Command, Option } from 'commander';
import type { Io } from '../../lib/io.js';
import { addWorkloadOptions } from '../../bench/client/workload-options.js';

const EXAMPLES = `
Examples:
  # 5 req/s Poisson, 100 text requests, OpenAI route of the mllm app (make run)
  cornserve bench --api chat --model mllm --request-rate 5 --num-requests 100

  # a multimodal mix for 60 s, gamma-bursty arrivals (CV 2), with SLOs
  cornserve bench --api chat --model mllm --request-rate 4 --burstiness 0.25 --duration 60 \\
    --mix text:0.4,image:0.4,audio:0.2 --image-size 1280x720 --audio-seconds 5 --slo ttft_ms=500,tpot_ms=50

  # any app through /app/invoke, ready requests from a file, at most 8 in flight
  cornserve bench --api invoke --app echo --dataset requests.jsonl --max-concurrency 8 --num-requests 500

  # the highest rate at which ≥ 90% of requests meet the SLOs
  cornserve bench --api chat --model mllm --sweep-rates 1,2,4,8 --num-requests 60 --slo e2el_ms=2000

  # on/off and step patterns, a 10-minute soak (memory of every platform process, p99 per minute)
  cornserve bench --api chat --model mllm --request-rate 2 --pattern on-off:20 --duration 120
  cornserve bench --api chat --model mllm --pattern step:1,2,4:30 --duration 90
  cornserve bench --api chat --model mllm --request-rate 2 --soak 10

Output: a summary table; --result-dir (default bench-results/<timestamp>) gets results.json (vLLM
benchmark_serving's key names: completed, request_throughput, mean_ttft_ms, p99_e2el_ms, request_goodput, …),
summary.md and SVG + PNG plots (latency CDFs, throughput and goodput vs rate, in-flight requests and
executors per task over time, soak memory). Ctrl-C stops sending and still writes the partial results.
`;

export function benchCommand(io: Io, gatewayUrl: () => string): Command {
  return addWorkloadOptions(new Command('bench')
    .description('load a running gateway the way users do and report vLLM benchmark_serving metrics (TTFT, TPOT, ITL, E2EL, throughput, goodput)')
    .addOption(new Option('--api <api>', 'chat: POST /v1/chat/completions (streamed, tokens counted from the stream); invoke: POST /app/invoke/APP (JSON or NDJSON; first chunk = first token)').choices(['chat', 'invoke']).default('chat'))
    .option('--model <app>', '--api chat: the app name or alias used as the OpenAI model')
    .option('--app <app>', '--api invoke: the app to invoke')
    .option('--request-rate <r>', "requests per second, or 'inf' to send all at once", 'inf')
    .option('--max-concurrency <n>', 'at most N requests in flight (a request waits for a slot)')
    .option('--num-requests <n>', 'requests to send (default 100 unless --duration or --soak)')
    .option('--duration <s>', 'send for S seconds (with --num-requests: whichever ends first)')
    .option('--mix <mix>', 'request kinds and weights, e.g. text:0.4,image:0.4,audio:0.2 (kinds: text, image, audio, video; default text:1, soak text:0.5,image:0.3,audio:0.2)')
    , { inputLen: '64', outputLen: '32', imageSize: '224x224', audioSeconds: '2', videoFrames: '4' })
    .option('--dataset <file.jsonl>', 'ready requests, one JSON object per line (chat: a chat request; invoke: the request_data)')
    .option('--slo <slos>', 'SLOs for goodput and attainment, e.g. ttft_ms=500,tpot_ms=50,e2el_ms=5000')
    .option('--sweep-rates <rates>', 'run each rate (e.g. 1,2,4,8) and report the highest with ≥ 90% SLO attainment')
    .option('--soak <minutes>', 'a mixed load for MINUTES: p99 per minute and RSS of every platform process (local platform, /proc)')
    .option('--soak-sample-s <s>', 'memory sampling interval of a soak run', '5')
    .option('--result-dir <dir>', 'where results.json, summary.md and plots go (default bench-results/<timestamp>)')
    .option('--request-timeout <s>', 'client-side bound on one request', '300')
    .option('--drain-timeout <s>', 'after Ctrl-C: how long requests in flight may still finish', '30')
    .option('--no-plots', 'skip the SVG/PNG plots')
    .addHelpText('after', EXAMPLES)
    .action(async (opts) => {
      const { benchCommand: run } = await import('../../bench/client/command.js');
      await run(opts, gatewayUrl(), io);
    });
}
