// Bootstrap of every worker thread the executor scaffolding starts (see thread.ts): worker threads do not
// inherit `--import tsx`, so this plain-JS entry registers tsx in the thread, then imports the real module,
// whose URL comes as the thread's first argv.
import { register } from 'tsx/esm/api';

register();
await import(process.argv[2]);
