/** Unauthenticated operational routes: liveness, readiness, metrics and the OpenAPI document. */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { Pool } from '../../store/pool.ts';
import type { Api } from '../app.ts';
import type { ApiMetrics } from '../metrics.ts';
import { readinessCheck } from '../readiness.ts';

export function healthRoutes(
  app: Api,
  deps: { pool: Pool; metrics: ApiMetrics; openApiDocument: (request: FastifyRequest) => unknown },
): void {
  const open = { auth: false };
  const ready = readinessCheck(deps.pool);

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
      const r = await ready();
      if (r.ready) return { status: 'ready' as const, schemaVersion: r.schemaVersion };
      return await reply.status(503).send({ status: 'unavailable', reason: r.reason });
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
