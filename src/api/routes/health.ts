/** Unauthenticated operational routes: liveness, readiness, metrics and the OpenAPI document. */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { loadMigrations } from '../../store/migrate.ts';
import { migrationVersionApplied } from '../../store/stats.ts';
import type { Pool } from '../../store/pool.ts';
import type { Api } from '../app.ts';
import type { ApiMetrics } from '../metrics.ts';

const READY_TIMEOUT_MS = 2000;

export function healthRoutes(
  app: Api,
  deps: { pool: Pool; metrics: ApiMetrics; openApiDocument: (request: FastifyRequest) => unknown },
): void {
  const open = { auth: false };
  const expectedVersion = loadMigrations().then((m) => m.at(-1)?.version ?? 0);
  // Not awaited until the first /readyz; a failure then answers 503 rather than crashing start-up.
  expectedVersion.catch(() => undefined);

  app.get(
    '/healthz',
    {
      config: open,
      schema: {
        operationId: 'healthz',
        summary: 'Liveness: the process answers',
        tags: ['health'],
        security: [],
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      config: open,
      schema: {
        operationId: 'readyz',
        summary: "Readiness: the database answers and its schema is this build's",
        tags: ['health'],
        security: [],
        response: {
          200: Type.Object({ status: Type.Literal('ready'), schemaVersion: Type.Integer() }),
          503: Type.Object({ status: Type.Literal('unavailable'), reason: Type.String() }),
        },
      },
    },
    async (_request, reply) => {
      try {
        const version = await withTimeout(migrationVersionApplied(deps.pool), READY_TIMEOUT_MS);
        const expected = await expectedVersion;
        if (version < expected) {
          const reason = `schema at version ${version}, this build needs ${expected}`;
          return await reply.status(503).send({ status: 'unavailable', reason });
        }
        return { status: 'ready' as const, schemaVersion: version };
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        return await reply.status(503).send({ status: 'unavailable', reason: `database: ${reason}` });
      }
    },
  );

  app.get(
    '/metrics',
    {
      config: open,
      schema: {
        operationId: 'metrics',
        summary: 'Prometheus metrics (text exposition format)',
        tags: ['health'],
        security: [],
        produces: ['text/plain'],
        response: { 200: { description: 'Prometheus text format 0.0.4', type: 'string' } },
      },
    },
    async (_request, reply) => {
      const { contentType, body } = await deps.metrics.render();
      return await reply.type(contentType).send(body);
    },
  );

  app.get('/openapi.json', { config: open, schema: { hide: true } }, (request) =>
    deps.openApiDocument(request),
  );
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
