/** Administration (admin tokens only): API tokens, tenants and their quotas, queue limits and retry defaults. */
import { Type } from '@sinclair/typebox';
import { queueGet, queueList, queueUpsert, type QueueRow } from '../../store/queues.ts';
import { tenantExists, tenantGet, tenantList, tenantUpsert } from '../../store/tenants.ts';
import { tokenList, tokenRevoke } from '../../store/tokens.ts';
import { Tenant, tenantJson, Token, tokenJson } from '../admin-json.ts';
import type { Api } from '../app.ts';
import { requireAdmin } from '../auth.ts';
import { badRequest, notFound } from '../errors.ts';
import { Name, NonNegativeInt4, PositiveInt4, QueueName, TenantId, Uuid } from '../../contract/fields.ts';
import { withErrors } from '../schemas.ts';
import type { RouteDeps } from '../server.ts';
import { tokenMint } from '../tokens.ts';

const ADMIN_ERRORS = [400, 401, 403, 404, 429];

const Queue = Type.Object({
  name: Type.String(),
  maxRunning: Type.Union([Type.Integer(), Type.Null()]),
  maxAttempts: Type.Integer(),
  backoffBaseMs: Type.Integer(),
  backoffMaxMs: Type.Integer(),
  timeoutMs: Type.Union([Type.Integer(), Type.Null()]),
  configured: Type.Boolean({ description: 'false: the queue has no row and runs under these defaults' }),
});

// The column defaults of 0001_core.sql, reported for queues that have no row yet.
const QUEUE_DEFAULTS = {
  maxRunning: null,
  maxAttempts: 4,
  backoffBaseMs: 1000,
  backoffMaxMs: 3_600_000,
  timeoutMs: null,
};

function queueJson(name: string, row: QueueRow | undefined) {
  if (row === undefined) return { name, ...QUEUE_DEFAULTS, configured: false };
  return {
    name: row.name,
    maxRunning: row.maxRunning,
    maxAttempts: row.maxAttempts,
    backoffBaseMs: row.backoffBaseMs,
    backoffMaxMs: row.backoffMaxMs,
    timeoutMs: row.timeoutMs,
    configured: true,
  };
}

const Nullable = <T extends ReturnType<typeof PositiveInt4>>(t: T) => Type.Union([t, Type.Null()]);

export function adminRoutes(app: Api, deps: RouteDeps): void {
  const { pool } = deps;

  app.post(
    '/v1/tokens',
    {
      schema: {
        operationId: 'createToken',
        summary: 'Create an API token (shown once)',
        tags: ['admin'],
        body: Type.Object(
          {
            name: Name,
            tenantId: Type.Optional(
              Type.Union([TenantId, Type.Null()], { description: 'null or absent: an admin token' }),
            ),
            ratePerS: Type.Optional(
              Nullable(PositiveInt4('requests per second; null for the server default')),
            ),
          },
          { additionalProperties: false },
        ),
        response: withErrors(
          { 201: Type.Composite([Token, Type.Object({ token: Type.String() })]) },
          ADMIN_ERRORS,
        ),
      },
    },
    async (request, reply) => {
      requireAdmin(request);
      const { name, tenantId = null, ratePerS = null } = request.body;
      if (tenantId !== null && !(await tenantExists(pool, tenantId))) {
        throw badRequest([{ field: 'body.tenantId', reason: `no tenant ${tenantId}` }]);
      }
      const minted = await tokenMint(pool, { tenantId, name, ratePerS });
      return await reply.status(201).send({ ...tokenJson(minted.row), token: minted.token });
    },
  );

  app.get(
    '/v1/tokens',
    {
      schema: {
        operationId: 'listTokens',
        summary: 'List active tokens (never their secrets)',
        tags: ['admin'],
        querystring: Type.Object({ tenantId: Type.Optional(TenantId) }, { additionalProperties: false }),
        response: withErrors({ 200: Type.Object({ items: Type.Array(Token) }) }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      const filter = request.query.tenantId === undefined ? {} : { tenantId: request.query.tenantId };
      return { items: (await tokenList(pool, filter)).map(tokenJson) };
    },
  );

  app.delete(
    '/v1/tokens/:id',
    {
      schema: {
        operationId: 'revokeToken',
        summary: 'Revoke a token; it stops working at once on every replica',
        tags: ['admin'],
        params: Type.Object({ id: Uuid }),
        response: withErrors({ 200: Token }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      const row = await tokenRevoke(pool, request.params.id);
      if (row === undefined) throw notFound(`token ${request.params.id}`);
      deps.limiter.forget(row.id);
      return tokenJson(row);
    },
  );

  app.get(
    '/v1/tenants',
    {
      schema: {
        operationId: 'listTenants',
        summary: 'List tenants',
        tags: ['admin'],
        response: withErrors({ 200: Type.Object({ items: Type.Array(Tenant) }) }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      return { items: (await tenantList(pool)).map(tenantJson) };
    },
  );

  app.get(
    '/v1/tenants/:id',
    {
      schema: {
        operationId: 'getTenant',
        summary: 'Show a tenant',
        tags: ['admin'],
        params: Type.Object({ id: TenantId }),
        response: withErrors({ 200: Tenant }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      const row = await tenantGet(pool, request.params.id);
      if (row === undefined) throw notFound(`tenant ${request.params.id}`);
      return tenantJson(row);
    },
  );

  app.put(
    '/v1/tenants/:id',
    {
      schema: {
        operationId: 'putTenant',
        summary: 'Create a tenant or replace its name and quota',
        tags: ['admin'],
        params: Type.Object({ id: TenantId }),
        body: Type.Object(
          {
            name: Name,
            maxRunning: Type.Optional(Nullable(PositiveInt4('cluster-wide cap on running jobs; null: none'))),
          },
          { additionalProperties: false },
        ),
        response: withErrors({ 200: Tenant, 201: Tenant }, ADMIN_ERRORS),
      },
    },
    async (request, reply) => {
      requireAdmin(request);
      const { row, created } = await tenantUpsert(pool, {
        id: request.params.id,
        name: request.body.name,
        maxRunning: request.body.maxRunning ?? null,
      });
      return await reply.status(created ? 201 : 200).send(tenantJson(row));
    },
  );

  app.get(
    '/v1/queues',
    {
      schema: {
        operationId: 'listQueues',
        summary: 'List configured queues',
        tags: ['admin'],
        response: withErrors({ 200: Type.Object({ items: Type.Array(Queue) }) }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      return { items: (await queueList(pool)).map((row) => queueJson(row.name, row)) };
    },
  );

  app.get(
    '/v1/queues/:name',
    {
      schema: {
        operationId: 'getQueue',
        summary: "Show a queue's settings (the defaults when it has none of its own)",
        tags: ['admin'],
        params: Type.Object({ name: QueueName }),
        response: withErrors({ 200: Queue }, ADMIN_ERRORS),
      },
    },
    async (request) => {
      requireAdmin(request);
      return queueJson(request.params.name, await queueGet(pool, request.params.name));
    },
  );

  app.patch(
    '/v1/queues/:name',
    {
      schema: {
        operationId: 'updateQueue',
        summary: "Change a queue's concurrency limit and retry defaults (fields left out keep their value)",
        tags: ['admin'],
        params: Type.Object({ name: QueueName }),
        body: Type.Object(
          {
            maxRunning: Type.Optional(Nullable(PositiveInt4('cluster-wide cap on running jobs; null: none'))),
            maxAttempts: Type.Optional(PositiveInt4('attempts before the dead letter')),
            backoffBaseMs: Type.Optional(NonNegativeInt4('first retry delay')),
            backoffMaxMs: Type.Optional(NonNegativeInt4('longest retry delay')),
            timeoutMs: Type.Optional(Nullable(PositiveInt4('default deadline per attempt; null: none'))),
          },
          { additionalProperties: false },
        ),
        response: withErrors({ 200: Queue, 201: Queue }, ADMIN_ERRORS),
      },
    },
    async (request, reply) => {
      requireAdmin(request);
      const current = queueJson(request.params.name, await queueGet(pool, request.params.name));
      const next = { ...current, ...request.body };
      if (next.backoffMaxMs < next.backoffBaseMs) {
        throw badRequest([
          { field: 'body.backoffMaxMs', reason: `must be at least backoffBaseMs (${next.backoffBaseMs})` },
        ]);
      }
      const { row, created } = await queueUpsert(pool, request.params.name, next);
      return await reply.status(created ? 201 : 200).send(queueJson(row.name, row));
    },
  );
}
