/**
 * Preloaded into every child of the local platform (`--import`): if the parent dies without cleaning up
 * (SIGKILL, a crash in native code), the child notices it was re-parented and terminates itself, so no
 * executor outlives the platform that started it. The check is an unref'd timer: it never keeps a child alive.
 */
const parent = Number(process.env.CORNSERVE_PARENT_PID);
// Only the child the platform spawned watches its parent: a process this child forks with its own execArgv (this
// guard preloaded again, e.g. node-llama-cpp's binary check) must not take the platform for its parent and end itself.
delete process.env.CORNSERVE_PARENT_PID;
const POLL_MS = 500;

if (Number.isInteger(parent) && parent > 0) {
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    process.kill(process.pid, 'SIGTERM'); // runs the child's own graceful handler, or the default (exit)
    setTimeout(() => process.exit(1), 5_000).unref();
  }, POLL_MS);
  timer.unref();
}
