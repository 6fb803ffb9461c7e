/**
 * The TypeScript client: one object with grouped sub-clients (`client.schedules`, `client.jobs`, …),
 * each defined beside the layer that owns its rows.
 */
import { ConfigError } from './errors.ts';
import type { Clock } from './clock.ts';
import { createPool, withMovedRowRetry, type Pool } from './store/pool.ts';
import { ScheduleClient } from './scheduler/schedule-client.ts';
import { JobClient } from './worker/job-client.ts';
import { QueueClient } from './worker/queue-client.ts';
import { WorkerRegistryClient } from './worker/registry-client.ts';
import { WorkflowClient } from './workflow/workflow-client.ts';

export interface ClientOptions {
  /** PostgreSQL URL; ignored when `pool` is given. */
  connectionString?: string;
  /**
   * Share a pool the application already has; the client then does not end it on close. Tidemark's
   * own pools connect with `options: '-c jit=off -c max_parallel_workers_per_gather=0'`
   * (docs/production.md, Connections); give yours the same.
   */
  pool?: Pool;
  /**
   * For tests: schedule fire times count from this clock instead of the database's (the default,
   * the clock the scheduler runs on, whatever this host's clock says).
   */
  clock?: Clock;
  /** Who queue pauses, resumes and settings changes made through this client are recorded as. Default `library`. */
  changedBy?: string;
}

export class Client {
  readonly pool: Pool;
  /** Jobs: enqueue, get, list, cancel, retry, the dead letter. */
  readonly jobs: JobClient;
  /** Schedules: create, update, pause, resume, delete, trigger now, backfill, list, occurrences. */
  readonly schedules: ScheduleClient;
  /** Workflows: submit DAGs, status, nodes, timeline, cancel, resume, signal. */
  readonly workflows: WorkflowClient;
  /** Queues: settings, pause and resume cluster-wide, and the audit of every change. */
  readonly queues: QueueClient;
  /** Worker processes: what each runs, and which stopped or were lost. */
  readonly workers: WorkerRegistryClient;
  readonly #ownsPool: boolean;

  constructor(options: ClientOptions) {
    if (options.pool !== undefined) {
      this.pool = withMovedRowRetry(options.pool);
      this.#ownsPool = false;
    } else {
      const connectionString = options.connectionString ?? process.env.DATABASE_URL;
      if (connectionString === undefined || connectionString === '') {
        throw new ConfigError('connectionString: required (or set DATABASE_URL, or pass a pool)');
      }
      this.pool = createPool({ connectionString, applicationName: 'tidemark-client' });
      this.#ownsPool = true;
    }
    this.schedules = new ScheduleClient(this.pool, options.clock);
    this.jobs = new JobClient(this.pool);
    this.workflows = new WorkflowClient(this.pool);
    this.queues = new QueueClient(this.pool, options.changedBy);
    this.workers = new WorkerRegistryClient(this.pool);
  }

  async close(): Promise<void> {
    if (this.#ownsPool) await this.pool.end();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
