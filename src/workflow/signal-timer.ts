/**
 * Fires the timeouts of signal nodes on an interval, for a process that runs no worker; a Worker
 * (the push preset in `tidemark dev` included) applies them in its own maintenance passes.
 */
import type { Logger } from '../log.ts';
import type { Pool } from '../store/pool.ts';
import { signalTimeoutsFire } from '../store/workflow-signal-timeouts.ts';

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
