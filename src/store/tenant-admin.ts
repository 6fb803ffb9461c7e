/** Tenant administration (the tenants table of 0001_core.sql), for the admin API. */
import type { Queryable } from './pool.ts';

export interface TenantRow {
  id: string;
  name: string;
  max_running: number | null;
  created_at: Date;
}

const COLUMNS = 'id, name, max_running, created_at';

export async function tenantExists(db: Queryable, id: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM tenants WHERE id = $1', [id]);
  return rows.length > 0;
}

export async function tenantGet(db: Queryable, id: string): Promise<TenantRow | undefined> {
  const { rows } = await db.query<TenantRow>(`SELECT ${COLUMNS} FROM tenants WHERE id = $1`, [id]);
  return rows[0];
}

export async function tenantList(db: Queryable): Promise<TenantRow[]> {
  const { rows } = await db.query<TenantRow>(`SELECT ${COLUMNS} FROM tenants ORDER BY id`);
  return rows;
}

/** Creates the tenant or replaces its name and quota; `created` tells which. */
export async function tenantUpsert(
  db: Queryable,
  tenant: { id: string; name: string; maxRunning: number | null },
): Promise<{ row: TenantRow; created: boolean }> {
  const { rows } = await db.query<TenantRow & { created: boolean }>(
    `INSERT INTO tenants (id, name, max_running) VALUES ($1, $2, $3)
     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, max_running = EXCLUDED.max_running
     RETURNING ${COLUMNS}, (xmax = 0) AS created`,
    [tenant.id, tenant.name, tenant.maxRunning],
  );
  const row = rows[0];
  if (row === undefined) throw new Error('tenantUpsert: INSERT … RETURNING returned no row');
  const { created, ...rest } = row;
  return { row: rest, created };
}
