/**
 * What the maintenance role has done in this process: rows pruned per table since start, passes,
 * and whether this replica holds the lease (api/process-metrics.ts exports the last two). The
 * cluster-wide totals and the oldest row left per table are read from the database at scrape time.
 */
export const PrunedTable = {
  jobs: 'jobs',
  job_attempts: 'job_attempts',
  job_effects: 'job_effects',
  occurrences: 'occurrences',
  workflows: 'workflows',
  workflow_nodes: 'workflow_nodes',
  workers: 'workers',
  occurrence_minutes: 'occurrence_minutes',
  occurrence_days: 'occurrence_days',
  queue_changes: 'queue_changes',
} as const;
export type PrunedTable = (typeof PrunedTable)[keyof typeof PrunedTable];

export type MaintenanceRole = 'standby' | 'leader' | 'stopped';

export interface MaintenanceMetricsSnapshot {
  role: MaintenanceRole;
  epoch: number | null;
  passes: number;
  lastPassMs: number | null;
  pruned: Record<PrunedTable, number>;
}

export class MaintenanceMetrics {
  role: MaintenanceRole = 'stopped';
  epoch: number | null = null;
  passes = 0;
  lastPassMs: number | null = null;
  readonly #pruned: Record<PrunedTable, number> = {
    jobs: 0,
    job_attempts: 0,
    job_effects: 0,
    occurrences: 0,
    workflows: 0,
    workflow_nodes: 0,
    workers: 0,
    occurrence_minutes: 0,
    occurrence_days: 0,
    queue_changes: 0,
  };

  add(table: PrunedTable, n: number): void {
    this.#pruned[table] += n;
  }

  snapshot(): MaintenanceMetricsSnapshot {
    return {
      role: this.role,
      epoch: this.epoch,
      passes: this.passes,
      lastPassMs: this.lastPassMs,
      pruned: { ...this.#pruned },
    };
  }
}
