/**
 * The undici package, loaded without taking over Node's own fetch. Loading undici installs its Agent as the
 * process-wide dispatcher when none is set yet, and Node's built-in `fetch` (its own, older undici) would then send
 * every request of the process through this one: on Node 20 a fetch that sets its own content-length is refused.
 * Node's undici claims that slot when it loads (on the first use of fetch, Headers, ...), so it is made to load first.
 * Every module that uses undici's API imports it from here (types may come from 'undici' directly).
 */
import { createRequire } from 'node:module';

new Headers(); // loads Node's own undici, which takes the dispatcher slot
const undici = createRequire(import.meta.url)('undici') as typeof import('undici');

export const { Agent, buildConnector, fetch } = undici;
export type Agent = import('undici').Agent;
