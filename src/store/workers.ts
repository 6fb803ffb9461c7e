/**
 * Named statements on `workers`: the registry of worker processes. A row's state is judged by the
 * database's clock: stopped once marked, lost when its heartbeat is older than three of its own
 * intervals, running otherwise.
 */
import type { Queryable } from './pool.ts';

export interface WorkerQueueSlots {
  name: string;
  concurrency: number;
  /** Slots in use at the last heartbeat. */
  running: number;
}

export interface WorkerRegistration {
  id: string;
  host: string;
  pid: number;
  version: string;
  queues: WorkerQueueSlots[];
  heartbeatMs: number;
}

export type WorkerState = 'running' | 'stopped' | 'lost';

export interface WorkerRow {
  id: string;
  host: string;
  pid: number;
  version: string;
  queues: WorkerQueueSlots[];
  startedAt: Date;
  heartbeatAt: Date;
  stoppedAt: Date | null;
  state: WorkerState;
}

/** Missed heartbeats after which a worker that did not stop is reported lost. */
export const WORKER_LOST_AFTER_HEARTBEATS = 3;

/** Registers the process; an id registered before (a restart with the same --id) starts afresh. */
export async function workerRegister(db: Queryable, w: WorkerRegistration): Promise<void> {
  await db.query(
    `INSERT INTO workers (id, host, pid, version, queues, heartbeat_ms) VALUES ($1, $2, $3, $4, $5::jsonb, $6)
     ON CONFLICT (id) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, version = EXCLUDED.version,
       queues = EXCLUDED.queues, heartbeat_ms = EXCLUDED.heartbeat_ms, started_at = now(),
       heartbeat_at = now(), stopped_at = NULL`,
    [w.id, w.host, w.pid, w.version, JSON.stringify(w.queues), w.heartbeatMs],
  );
}

/** false when the row is gone (pruned while this process could not heartbeat) or marked stopped. */
export async function workerHeartbeat(
  db: Queryable,
  id: string,
  queues: readonly WorkerQueueSlots[],
): Promise<boolean> {
  const { rowCount } = await db.query({
    name: 'tidemark_worker_heartbeat',
    text: `UPDATE workers SET heartbeat_at = now(), queues = $2::jsonb WHERE id = $1 AND stopped_at IS NULL`,
    values: [id, JSON.stringify(queues)],
  });
  return rowCount === 1;
}

export async function workerStop(
  db: Queryable,
  id: string,
  queues: readonly WorkerQueueSlots[],
): Promise<void> {
  await db.query(
    `UPDATE workers SET stopped_at = now(), heartbeat_at = now(), queues = $2::jsonb WHERE id = $1`,
    [id, JSON.stringify(queues)],
  );
}

/** Running first, then lost, then stopped; newest start first within each. */
export async function workerList(db: Queryable): Promise<WorkerRow[]> {
  const { rows } = await db.query<WorkerRow>(
    `SELECT id, host, pid, version, queues, started_at AS "startedAt", heartbeat_at AS "heartbeatAt",
            stopped_at AS "stoppedAt",
            CASE WHEN stopped_at IS NOT NULL THEN 'stopped'
                 WHEN heartbeat_at < now() - make_interval(secs => heartbeat_ms * ${WORKER_LOST_AFTER_HEARTBEATS} / 1000.0)
                   THEN 'lost'
                 ELSE 'running' END AS state
       FROM workers
      ORDER BY CASE WHEN stopped_at IS NOT NULL THEN 2
                    WHEN heartbeat_at < now() - make_interval(secs => heartbeat_ms * ${WORKER_LOST_AFTER_HEARTBEATS} / 1000.0)
                      THEN 1 ELSE 0 END,
               started_at DESC, id`,
  );
  return rows;
}

export interface WorkerJobRow {
  owner: string;
  jobId: number;
  queue: string;
  kind: string;
  tenantId: string;
  startedAt: Date;
  progress: unknown;
}

/**
 * The running jobs leased by these workers (including jobs a worker claimed ahead and holds for a
 * free slot). Reads only running jobs, a set as small as the fleet's slots (jobs_running_idx).
 */
export async function workerJobsRunning(db: Queryable, owners: readonly string[]): Promise<WorkerJobRow[]> {
  if (owners.length === 0) return [];
  const { rows } = await db.query<WorkerJobRow>(
    `SELECT lease_owner AS owner, id AS "jobId", queue, kind, tenant_id AS "tenantId", started_at AS "startedAt",
            progress
       FROM jobs WHERE state = 'running' AND lease_owner = ANY ($1::text[])
      ORDER BY started_at, id`,
    [owners],
  );
  return rows;
}
