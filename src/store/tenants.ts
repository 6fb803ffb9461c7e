/** Named statements on `tenants`: who owns jobs, and their cluster-wide concurrency quota. */
import type { Queryable } from './pool.ts';

export interface TenantRow {
  id: string;
  name: string;
  /** Cap on this tenant's running jobs across every queue and worker; null: no quota. */
  maxRunning: number | null;
  createdAt: Date;
}

export async function tenantUpsert(
  db: Queryable,
  tenant: { id: string; name: string; maxRunning: number | null },
): Promise<TenantRow> {
  const result = await db.query<TenantRow>(
    `INSERT INTO tenants (id, name, max_running) VALUES ($1, $2, $3)
     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, max_running = EXCLUDED.max_running
     RETURNING id, name, max_running AS "maxRunning", created_at AS "createdAt"`,
    [tenant.id, tenant.name, tenant.maxRunning],
  );
  const row = result.rows[0];
  if (row === undefined) throw new Error(`tenant ${tenant.id}: upsert returned no row`);
  return row;
}
