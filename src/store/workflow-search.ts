/** Workflows listed newest first, filtered by tenant and state, paged by a (created_at, id) cursor. */
import type { Queryable } from './pool.ts';
import type { WorkflowRow, WorkflowState } from './workflows.ts';

/** Where a page ends: created_at as PostgreSQL's own text (a Date would drop its microseconds). */
export interface WorkflowCursor {
  at: string;
  id: string;
}

export interface WorkflowSearchFilter {
  tenantId?: string;
  state?: WorkflowState;
  /** The last row of the previous page: this page starts after it. */
  after?: WorkflowCursor;
  limit: number;
}

export type WorkflowSearchRow = WorkflowRow & { cursor_at: string };

export async function workflowSearch(db: Queryable, f: WorkflowSearchFilter): Promise<WorkflowSearchRow[]> {
  const { rows } = await db.query<WorkflowSearchRow>({
    name: 'workflowSearch',
    text: `SELECT *, created_at::text AS cursor_at FROM workflows
            WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR state = $2)
              AND ($3::timestamptz IS NULL OR (created_at, id) < ($3::timestamptz, $4::text))
            ORDER BY created_at DESC, id DESC LIMIT $5`,
    values: [f.tenantId ?? null, f.state ?? null, f.after?.at ?? null, f.after?.id ?? null, f.limit],
  });
  return rows;
}
