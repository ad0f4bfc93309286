/**
 * The task registry's routes (control/registry): POST /tasks/register {source} (admin) registers a user-defined
 * unit task (200 with `created: false` when an equal one is registered, 409 when a different one is, 422 naming
 * the problems when the source fails its check); DELETE /tasks/register/:name (admin) removes one no deployed task
 * uses (409 otherwise); GET /tasks/registered lists them.
 */
import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { parseOr422 } from '../../../lib/http.js';
import type { TaskRegistry } from '../../registry/task-registry.js';
import type { TaskDefinitionRecord } from '../../store/index.js';

const registerBody = z.object({ source: z.string().min(1) });

const definitionJSON = (d: TaskDefinitionRecord) => ({ name: d.name, class_name: d.className, digest: d.digest, registered_at: d.registeredAt, definition: d.definition });

export function registryRoutes(deps: { registry: TaskRegistry; admin: RequestHandler; json: RequestHandler }): Router {
  const r = Router();
  r.post('/tasks/register', deps.admin, deps.json, async (req, res) => {
    const { source } = parseOr422(registerBody, req.body, 'register body');
    const { record, created } = await deps.registry.register(source);
    res.json({ ...definitionJSON(record), created });
  });
  r.delete('/tasks/register/:name', deps.admin, async (req, res) => {
    await deps.registry.remove(String(req.params.name));
    res.json({ removed: req.params.name });
  });
  r.get('/tasks/registered', (_req, res) => {
    res.json(deps.registry.list().map(definitionJSON));
  });
  return r;
}
