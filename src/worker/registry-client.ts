/**
 * `client.workers`: the worker processes of the cluster, from the registry every `Worker` writes
 * (store/workers.ts), with the jobs each one holds right now. A worker that stopped cleanly says so;
 * one that stopped heartbeating (killed, host lost) is `lost` after three missed heartbeats. The
 * maintenance role prunes stopped and lost rows after `retention.workers` (default 1 day).
 */
import type { Pool } from '../store/pool.ts';
import { workerJobsRunning, workerList, type WorkerQueueSlots, type WorkerState } from '../store/workers.ts';

export type { WorkerQueueSlots, WorkerState } from '../store/workers.ts';

export interface WorkerJob {
  jobId: number;
  queue: string;
  kind: string;
  tenantId: string;
  startedAt: Date;
  /** The last progress its handler reported, or null. */
  progress: unknown;
}

export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  /** The Tidemark version the process runs. */
  version: string;
  startedAt: Date;
  heartbeatAt: Date;
  stoppedAt: Date | null;
  state: WorkerState;
  /** Each queue's slots and how many were in use at the last heartbeat. */
  queues: WorkerQueueSlots[];
  /** Jobs leased to it now (claimed ahead and waiting for a slot included). */
  running: WorkerJob[];
}

export class WorkerRegistryClient {
  readonly #pool: Pool;

  constructor(pool: Pool) {
    this.#pool = pool;
  }

  /** Running workers first, then lost, then stopped; newest first within each. */
  async list(): Promise<WorkerInfo[]> {
    const rows = await workerList(this.#pool);
    const jobs = await workerJobsRunning(
      this.#pool,
      rows.filter((r) => r.state !== 'stopped').map((r) => r.id),
    );
    const byOwner = new Map<string, WorkerJob[]>();
    for (const { owner, ...job } of jobs) {
      let list = byOwner.get(owner);
      if (list === undefined) byOwner.set(owner, (list = []));
      list.push(job);
    }
    return rows.map((r) => ({ ...r, running: byOwner.get(r.id) ?? [] }));
  }
}
