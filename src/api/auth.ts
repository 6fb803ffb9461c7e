/**
 * Bearer-token authentication, tenant scoping and the per-token rate limit, as one onRequest hook.
 *
 * Scoping rule: a tenant token sees only its own tenant. Every lookup of a schedule, job or workflow
 * is made with the caller's tenant in the WHERE clause, so another tenant's resource is not found in
 * exactly the way a missing one is (same status, same body), and existence cannot be probed.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Pool } from '../store/pool.ts';
import { tokenFindActiveByHash } from '../store/tokens.ts';
import { ApiError } from './errors.ts';
import type { RateLimiter } from './rate-limit.ts';
import { tokenHash } from './tokens.ts';

export interface Principal {
  tokenId: string;
  /** The token's name, for the audit of what it changed. */
  tokenName: string;
  /** null: an admin token, which may act for any tenant. */
  tenantId: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** false for the health, readiness, metrics and OpenAPI routes. */
    auth?: boolean;
  }
}

export interface AuthOptions {
  pool: Pool;
  limiter: RateLimiter;
  defaultRatePerS: number;
}

function unauthorized(reason: string): ApiError {
  return new ApiError(401, 'unauthorized', reason);
}

export function authHook(options: AuthOptions) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (request.routeOptions.config.auth === false) return;
    const header = request.headers.authorization;
    if (header === undefined) throw unauthorized('Authorization: Bearer <token> required');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match?.[1] === undefined) throw unauthorized('Authorization: expected "Bearer <token>"');
    const row = await tokenFindActiveByHash(options.pool, tokenHash(match[1]));
    if (row === undefined) throw unauthorized('token unknown or revoked');
    const retryAfterS = options.limiter.take(row.id, row.rate_per_s ?? options.defaultRatePerS);
    if (retryAfterS > 0) {
      void reply.header('retry-after', String(retryAfterS));
      throw new ApiError(429, 'rate_limited', `rate limit exceeded; retry after ${retryAfterS} s`);
    }
    request.principal = { tokenId: row.id, tenantId: row.tenant_id, tokenName: row.name };
  };
}

export function principalOf(request: FastifyRequest): Principal {
  if (request.principal === null) throw unauthorized('not authenticated');
  return request.principal;
}

export function requireAdmin(request: FastifyRequest): Principal {
  const principal = principalOf(request);
  if (principal.tenantId !== null) throw new ApiError(403, 'forbidden', 'this route needs an admin token');
  return principal;
}

/**
 * The tenant a request acts for. A tenant token always acts for its own tenant; naming another one
 * answers 404, as if that tenant did not exist. An admin token acts for the tenant it names, or
 * `fallback` (undefined: every tenant, for listings).
 */
export function tenantScope(request: FastifyRequest, requested: string | undefined): string | undefined {
  const { tenantId } = principalOf(request);
  if (tenantId === null) return requested;
  if (requested !== undefined && requested !== tenantId)
    throw new ApiError(404, 'not_found', `tenant ${requested} not found`);
  return tenantId;
}
