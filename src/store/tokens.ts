/**
 * API bearer tokens (0005_api.sql). The store sees only SHA-256 hashes; minting and hashing the
 * secret is the API's job (src/api/tokens.ts).
 */
import type { Queryable } from './pool.ts';

export interface TokenRow {
  id: string;
  tenant_id: string | null;
  name: string;
  rate_per_s: number | null;
  created_at: Date;
  revoked_at: Date | null;
}

const COLUMNS = 'id, tenant_id, name, rate_per_s, created_at, revoked_at';

export async function tokenCountActiveAdmins(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM api_tokens WHERE tenant_id IS NULL AND revoked_at IS NULL',
  );
  return rows[0]?.n ?? 0;
}

export async function tokenFindActiveByHash(db: Queryable, hash: Buffer): Promise<TokenRow | undefined> {
  const { rows } = await db.query<TokenRow>({
    name: 'tokenFindActiveByHash',
    text: `SELECT ${COLUMNS} FROM api_tokens WHERE hash = $1 AND revoked_at IS NULL`,
    values: [hash],
  });
  return rows[0];
}

export async function tokenInsert(
  db: Queryable,
  token: { tenantId: string | null; name: string; hash: Buffer; ratePerS: number | null },
): Promise<TokenRow> {
  const { rows } = await db.query<TokenRow>(
    `INSERT INTO api_tokens (tenant_id, name, hash, rate_per_s) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [token.tenantId, token.name, token.hash, token.ratePerS],
  );
  const row = rows[0];
  if (row === undefined) throw new Error('tokenInsert: INSERT … RETURNING returned no row');
  return row;
}

export async function tokenList(db: Queryable, filter: { tenantId?: string }): Promise<TokenRow[]> {
  const { rows } = await db.query<TokenRow>(
    `SELECT ${COLUMNS} FROM api_tokens
      WHERE revoked_at IS NULL AND ($1::text IS NULL OR tenant_id = $1)
      ORDER BY created_at, id`,
    [filter.tenantId ?? null],
  );
  return rows;
}

/** Revokes an active token; undefined when there is none with that id (or it was already revoked). */
export async function tokenRevoke(db: Queryable, id: string): Promise<TokenRow | undefined> {
  const { rows } = await db.query<TokenRow>(
    `UPDATE api_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
    [id],
  );
  return rows[0];
}
