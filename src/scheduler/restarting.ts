/**
 * For `tidemark dev`, where the scheduler shares its process with everything else and there is no
 * supervisor to restart it: a lost lease ends that scheduler's term (the instance stops, as the
 * standalone process does before exiting non-zero) and a fresh instance, with a new holder name,
 * starts as a standby and contends like any other. The lost instance is never reused: its term
 * state, index and control connection are gone, and a new holder makes the new term's epoch fence
 * distinct from the old one's.
 */
import { createLogger, type Logger } from '../log.ts';
import { Scheduler, type SchedulerOptions } from './scheduler.ts';
import type { SchedulerMetricsSnapshot } from './metrics.ts';

export class RestartingScheduler {
  readonly #options: SchedulerOptions & { log: Logger };
  #current: Scheduler;
  #stopped = false;
  #restarts = 0;
  #starting: Promise<void> | null = null;
  /** Always the current instance's metrics, so an exporter handed this once keeps reporting. */
  readonly metrics = { snapshot: (): SchedulerMetricsSnapshot => this.#current.metrics.snapshot() };

  constructor(options: Omit<SchedulerOptions, 'holder'>) {
    this.#options = { ...options, log: options.log ?? createLogger('scheduler') };
    this.#current = this.#create();
  }

  /** The instance running now (a new one after every lost lease). */
  get current(): Scheduler {
    return this.#current;
  }

  get restarts(): number {
    return this.#restarts;
  }

  async start(): Promise<void> {
    await this.#current.start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#starting;
    await this.#current.stop();
  }

  #create(): Scheduler {
    return new Scheduler({ ...this.#options, onLost: (reason) => this.#restart(reason) });
  }

  #restart(reason: string): void {
    this.#options.onLost?.(reason);
    if (this.#stopped) return;
    this.#restarts++;
    const next = this.#create();
    this.#current = next;
    this.#options.log.warn(
      { reason, restarts: this.#restarts },
      'scheduler term ended; a new instance contends as a standby',
    );
    this.#starting = next.start().catch((error: unknown) => {
      // start() only fails to open its control connection; that is a lost term too, so try again
      // after a tick rather than leaving dev without a scheduler.
      const message = error instanceof Error ? error.message : String(error);
      next.stop().catch(() => undefined);
      setTimeout(() => this.#restart(`restart failed: ${message}`), this.#options.tickMs ?? 1_000).unref();
    });
  }
}
