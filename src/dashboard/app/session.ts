/// <reference lib="dom" />
/**
 * Who is signed in and what this server offers. An admin token may look at every tenant; a tenant
 * token sees only its own (the API enforces it; the dashboard also hides cluster-wide figures, which
 * would tell one tenant about the others' load). Route presence comes from /openapi.json, so a page
 * whose routes this server lacks says so instead of failing.
 */
import { request } from './api.ts';

export interface Session {
  token: string;
  admin: boolean;
  /** The token's tenant; null for an admin token. */
  tenantId: string | null;
  /** Tenant ids an admin can pick from; empty for a tenant token. */
  tenants: string[];
  /** "METHOD /path" of every route the server documents. */
  routes: Set<string>;
}

export async function sessionOpen(token: string): Promise<Session> {
  // Proves the token and says whether it is an admin's, without probing an admin-only route.
  const me = await request<{ admin: boolean; tenantId: string | null }>('GET', '/v1/whoami', { token });
  const tenants = me.admin
    ? (await request<{ items: { id: string }[] }>('GET', '/v1/tenants', { token })).items.map((t) => t.id)
    : [];
  const doc = await request<{ paths?: Record<string, Record<string, unknown>> }>('GET', '/openapi.json', {
    token,
  });
  const routes = new Set<string>();
  for (const [path, methods] of Object.entries(doc.paths ?? {})) {
    for (const method of Object.keys(methods)) routes.add(`${method.toUpperCase()} ${path}`);
  }
  return { token, admin: me.admin, tenantId: me.tenantId, tenants, routes };
}

export function hasRoute(session: Session, route: string): boolean {
  return session.routes.has(route);
}
