/** Tokens and tenants as the API answers them, and as the CLI prints them when it acts on the database. */
import { Type, type Static } from '@sinclair/typebox';
import type { TenantRow } from '../store/tenants.ts';
import type { TokenRow } from '../store/tokens.ts';

export const Token = Type.Object({
  id: Type.String(),
  tenantId: Type.Union([Type.String(), Type.Null()]),
  name: Type.String(),
  ratePerS: Type.Union([Type.Integer(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
});
export type TokenJson = Static<typeof Token>;

export function tokenJson(row: TokenRow): TokenJson {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    ratePerS: row.rate_per_s,
    createdAt: row.created_at.toISOString(),
  };
}

export const Tenant = Type.Object({
  id: Type.String(),
  name: Type.String(),
  maxRunning: Type.Union([Type.Integer(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
});
export type TenantJson = Static<typeof Tenant>;

export function tenantJson(row: TenantRow): TenantJson {
  return { id: row.id, name: row.name, maxRunning: row.maxRunning, createdAt: row.createdAt.toISOString() };
}
