/**
 * The function link: the gateway → app-function hop of `cornserve up` as frames on one persistent connection per
 * app function, multiplexed by request id, instead of one HTTP request (headers written, parsed, a socket from the
 * agent's pool) per invocation. The framing is the project's (lib/frames.ts, the sidecar's too):
 *
 *   u32 LE header length | u32 LE payload length | header (UTF-8 JSON) | payload (raw bytes)
 *
 * The gateway reaches it through an HTTP Upgrade on the function's own address (`GET /link`, `Upgrade:
 * cornserve-link`): one address per function, and a function that answers anything but 101 keeps being called
 * over HTTP. Frames (`t` names the kind; `id` is the gateway's request id on this link):
 *
 *   gateway → function
 *     invoke  {id, deadline, trace?}   payload: the invoke body ({"request_data": ...})   trace: traceparent etc.
 *     cancel  {id, reason}             the client left, the deadline (+ grace) passed, or the request was cut
 *     pause   {id} / resume {id}       a stream's reader is behind / caught up (per-request back-pressure: the
 *                                      connection itself is never paused, other requests keep flowing)
 *   function → gateway
 *     head    {id, status, headers, end?}   payload: the first body bytes; `end`: that is the whole reply
 *     data    {id}                          payload: more body bytes (NDJSON lines of a stream)
 *     end     {id}
 *     error   {id, message}                 the reply cannot be completed (the gateway treats it as a cut connection)
 *
 * Frames of one id after its end, error or cancel are ignored by the receiver.
 */

/** The `Upgrade` protocol token and the path the gateway asks it on. */
export const LINK_PROTOCOL = 'cornserve-link';
export const LINK_PATH = '/link';

/** How the gateway reaches app functions under `up`: the framed link (default) or one HTTP request per invocation. */
export type FunctionHop = 'http' | 'link';
export const FUNCTION_HOPS: readonly FunctionHop[] = ['link', 'http'];
export const FUNCTION_HOP_ENV = 'CORNSERVE_FUNCTION_HOP';

/** The hop a setting names (unset or empty: the link); anything else is refused, naming the choices. */
export function functionHopOf(value: string | undefined): FunctionHop {
  if (value === undefined || value === '') return 'link';
  if ((FUNCTION_HOPS as readonly string[]).includes(value)) return value as FunctionHop;
  throw new Error(`${FUNCTION_HOP_ENV} must be one of ${FUNCTION_HOPS.join(', ')}, got ${JSON.stringify(value)}`);
}

export type ToFunction =
  | { t: 'invoke'; id: number; deadline: number; trace?: Record<string, string> }
  | { t: 'cancel'; id: number; reason: string }
  | { t: 'pause'; id: number }
  | { t: 'resume'; id: number };

export type ToGateway =
  | { t: 'head'; id: number; status: number; headers: Record<string, string>; end?: true }
  | { t: 'data'; id: number }
  | { t: 'end'; id: number }
  | { t: 'error'; id: number; message: string };

/** The 101 a function answers the upgrade with. */
export const SWITCHING = `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${LINK_PROTOCOL}\r\n\r\n`;
