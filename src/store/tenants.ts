/** Named statements on `tenants`: who owns jobs, and their cluster-wide concurrency quota. */
import type { Queryable } from './pool.ts';

export interface TenantRow {
  id: string;
  name: string;
  /** Cap on this tenant's running jobs across every queue and worker; null: no quota. */
  maxRunning: number | null;
  createdAt: Date;
}

const COLUMNS = 'id, name, max_running AS "maxRunning", created_at AS "createdAt"';

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
  if (row === undefined) throw new Error(`tenant ${tenant.id}: upsert returned no row`);
  const { created, ...rest } = row;
  return { row: rest, created };
}
