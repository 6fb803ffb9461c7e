/**
 * Fires the timeouts of signal nodes. Every `tidemark worker` runs one (and `tidemark dev`): each
 * timeout is applied under its workflow's row lock, taken SKIP LOCKED and rechecked there, so two
 * timers never apply one twice and never queue behind each other or behind completions. Deadlines
 * are judged by the database's clock, like leases, so a process with a skewed clock changes nothing.
 */
import type { Logger } from '../log.ts';
import { withTransaction, type Pool } from '../store/pool.ts';
import { workflowNodeTimedOut } from '../store/workflow-nodes.ts';
import { workflowSignalTimeouts } from '../store/workflow-release.ts';

const BATCH = 500;

/** One sweep: applies every timeout due by `asOf` (the database's now when null); returns how many. */
export async function signalTimeoutsFire(pool: Pool, asOf: Date | null = null): Promise<number> {
  let total = 0;
  for (;;) {
    const due = await workflowNodeTimedOut(pool, asOf, BATCH);
    if (due.length === 0) return total;
    const byWorkflow = new Map<string, number[]>();
    for (const d of due) byWorkflow.set(d.workflow_id, [...(byWorkflow.get(d.workflow_id) ?? []), d.id]);
    let skipped = 0;
    for (const ids of byWorkflow.values()) {
      const r = await withTransaction(pool, (tx) => workflowSignalTimeouts(tx, ids, asOf));
      total += r.succeeded + r.failed;
      if (r.skipped) skipped++;
    }
    // What another transaction held is still due: the next sweep takes it (reading it again now
    // could spin on the same locked rows).
    if (due.length < BATCH || skipped > 0) return total;
  }
}

export interface SignalTimerOptions {
  pool: Pool;
  log: Logger;
  /** Sweep interval; a timeout fires at most this late (default 1 s). */
  intervalMs?: number;
}

export class SignalTimer {
  readonly name = 'workflow-signal-timer';
  readonly #options: SignalTimerOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = true;

  constructor(options: SignalTimerOptions) {
    this.#options = options;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.#sweep().finally(() => {
        this.#running = undefined;
        this.#schedule();
      });
    }, this.#options.intervalMs ?? 1000);
  }

  async #sweep(): Promise<void> {
    try {
      const fired = await signalTimeoutsFire(this.#options.pool);
      if (fired > 0) this.#options.log.info({ fired }, 'signal timeouts applied');
    } catch (error) {
      // A database outage must not kill the process: the next sweep retries what is still due.
      this.#options.log.warn({ err: error }, 'signal timeout sweep failed');
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
