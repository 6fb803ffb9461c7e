/**
 * The HTTP API: `createApiServer({ pool })` builds a Fastify app with authentication, validation,
 * error handling, OpenAPI, metrics and every /v1 route; `listen()` starts it. Stateless apart from
 * the rate-limit buckets, so any number of replicas may run behind a load balancer.
 */
import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import type { Clock } from '../clock.ts';
import { systemClock } from '../clock.ts';
import { Client } from '../client.ts';
import type { Logger } from '../log.ts';
import { createLogger } from '../log.ts';
import type { Pool } from '../store/pool.ts';
import { createApp, type Api } from './app.ts';
import { authHook } from './auth.ts';
import { ApiError, handleError } from './errors.ts';
import { createApiMetrics, type ApiMetrics } from './metrics.ts';
import { RateLimiter } from './rate-limit.ts';
import { useJsonBodyParser } from './json-body.ts';
import { openApiDocuments } from './openapi.ts';
import { ErrorBody } from './schemas.ts';
import { validatorCompiler } from './validation.ts';
import { healthRoutes } from './routes/health.ts';
import { adminRoutes } from './routes/admin.ts';
import { routeModules } from './routes/index.ts';

export interface ApiServerOptions {
  pool: Pool;
  clock?: Clock;
  logger?: Logger;
  /** Largest accepted request body in bytes; larger ones get 413. Default 1 MiB. */
  bodyLimit?: number;
  /** Requests per second for tokens without their own rate; bursts of twice this. Default 100. */
  defaultRatePerS?: number;
  /**
   * The URL clients reach this API at (behind a proxy), given as `servers` in /openapi.json.
   * Default: the scheme and host each request of /openapi.json came in on.
   */
  publicUrl?: string;
}

export interface ApiServer {
  app: Api;
  metrics: ApiMetrics;
  /** Starts listening; resolves with the base URL (`http://host:port`). Port 0 picks a free one. */
  listen(options: { port: number; host?: string }): Promise<string>;
  close(): Promise<void>;
}

/** Shared by every route module. */
export interface RouteDeps {
  pool: Pool;
  clock: Clock;
  client: Client;
  limiter: RateLimiter;
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export async function createApiServer(options: ApiServerOptions): Promise<ApiServer> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger('api');
  const app = createApp({
    loggerInstance: logger,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    // Plain JSON.stringify for responses: response schemas are documentation, and a serializer
    // that silently drops undeclared properties would turn a schema slip into lost data.
    ajv: { customOptions: { strict: false } },
  });
  useJsonBodyParser(app);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request) => {
    throw new ApiError(404, 'not_found', `no route ${request.method} ${request.url.split('?')[0] ?? ''}`);
  });
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request, reply) => {
    void reply.header('x-request-id', request.id);
  });

  const metrics = createApiMetrics(options.pool);
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    metrics.duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });

  const limiter = new RateLimiter(clock);
  app.addHook(
    'onRequest',
    authHook({ pool: options.pool, limiter, defaultRatePerS: options.defaultRatePerS ?? 100 }),
  );

  app.addSchema(ErrorBody);
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Tidemark API',
        version: '1',
        license: { name: 'MIT', url: 'https://opensource.org/licenses/MIT' },
        description:
          "Schedules, jobs, dead letter, workflows, worker pull and administration. Every /v1 route needs `Authorization: Bearer <token>`; a tenant token sees only its own tenant, and another tenant's resource answers 404 exactly as a missing one.",
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
  });

  const openApiDocument = openApiDocuments(app, options.publicUrl);
  // Only an injected test clock reaches the client: otherwise fire times use the database's clock.
  const client = new Client({ pool: options.pool, clock: options.clock });
  const deps: RouteDeps = { pool: options.pool, clock, client, limiter };
  healthRoutes(app, { pool: options.pool, metrics, openApiDocument });
  adminRoutes(app, deps);
  for (const register of routeModules) register(app, deps);

  return {
    app,
    metrics,
    async listen({ port, host = '127.0.0.1' }) {
      await app.listen({ port, host });
      const address = app.server.address();
      if (address === null || typeof address === 'string') throw new Error('API server has no TCP address');
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      return `http://${shownHost}:${address.port}`;
    },
    async close() {
      await app.close();
    },
  };
}
