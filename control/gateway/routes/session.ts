/**
 * WS /session: the reference's interactive-session protocol on the gateway's own port.
 *
 * Each text frame is a request `{"verb": "heartbeat" | "declare_used" | "declare_not_used", "task_list":
 * UnitTaskList | null}` answered, in order, by one frame `{"status": 200|400|404|500, "content": string}`. The
 * contents start with the reference's words ("Session is alive", "Tasks declared used", "Tasks declared not
 * used", "Invalid request", "Unknown method", "Internal server error"); errors add ": <why>". A session that
 * expired (no frame for the timeout) answers 404 UNKNOWN_SESSION and the socket is closed (code 4404).
 */
import type { Server } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import { z } from 'zod';
import { isCornserveError } from '../../../functions/sdk/index.js';
import type { Logger } from '../../../lib/log.js';
import { Mutex } from '../../resources/mutex.js';
import { parseTaskList } from '../sessions/task-list.js';
import { UnknownSessionError, type Sessions } from '../sessions/sessions.js';

export const SESSION_PATH = '/session';
/** Close code for a socket whose session expired. */
export const SESSION_EXPIRED_CLOSE = 4404;

export interface SessionReply {
  status: number;
  content: string;
}

const frameSchema = z.object({ verb: z.string(), task_list: z.unknown().optional() });

/** Answers one request frame of session `id` (exported for the protocol tests). */
export async function handleFrame(sessions: Sessions, id: string, data: string): Promise<SessionReply> {
  let frame: z.infer<typeof frameSchema>;
  try {
    const parsed = frameSchema.safeParse(JSON.parse(data));
    if (!parsed.success) return { status: 400, content: `Invalid request: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}` };
    frame = parsed.data;
  } catch (e) {
    return { status: 400, content: `Invalid request: not JSON (${(e as Error).message})` };
  }
  try {
    switch (frame.verb) {
      case 'heartbeat':
        sessions.heartbeat(id);
        return { status: 200, content: 'Session is alive' };
      case 'declare_used':
      case 'declare_not_used': {
        if (frame.task_list === undefined || frame.task_list === null) return { status: 400, content: `Invalid request: ${frame.verb} needs a task_list` };
        sessions.heartbeat(id); // an unknown session is reported before the list is judged
        const tasks = parseTaskList(frame.task_list);
        if (frame.verb === 'declare_used') {
          await sessions.declareUsed(id, tasks);
          return { status: 200, content: 'Tasks declared used' };
        }
        await sessions.declareNotUsed(id, tasks);
        return { status: 200, content: 'Tasks declared not used' };
      }
      default:
        return { status: 404, content: `Unknown method: ${frame.verb} (heartbeat, declare_used or declare_not_used)` };
    }
  } catch (e) {
    if (e instanceof UnknownSessionError) return { status: 404, content: e.message };
    if (isCornserveError(e) && e.status < 500) return { status: 400, content: `Invalid request: ${e.message}` };
    return { status: 500, content: `Internal server error: ${(e as Error).message ?? String(e)}` };
  }
}

/** Serves WS /session on `server` (upgrades on other paths get 400). Returns a closer. */
export function attachSessionSocket(server: Server, sessions: Sessions, log: Logger): () => Promise<void> {
  const wss = new WebSocketServer({ server, path: SESSION_PATH, maxPayload: 16 << 20 });
  const sockets = new Map<string, WebSocket>();
  wss.on('connection', (sock) => {
    const id = sessions.open();
    sockets.set(id, sock);
    const order = new Mutex();
    sock.on('message', (data, isBinary) => {
      void order.run(async () => {
        const reply = isBinary ? { status: 400, content: 'Invalid request: frames are JSON text' } : await handleFrame(sessions, id, data.toString());
        if (sock.readyState === sock.OPEN) sock.send(JSON.stringify(reply));
        if (reply.status === 404 && reply.content.startsWith('unknown session')) sock.close(SESSION_EXPIRED_CLOSE, 'session expired');
      });
    });
    sock.on('error', (err) => log.warn({ err, session: id }, 'session socket error'));
    sock.on('close', () => {
      sockets.delete(id);
      void order.run(() => sessions.close(id, 'its socket closed')).catch((err) => log.error({ err, session: id }, 'releasing a closed session failed'));
    });
  });
  return async () => {
    for (const sock of sockets.values()) sock.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
    await sessions.closeAll();
  };
}
