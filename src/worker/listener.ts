/**
 * One LISTEN connection per worker process: `tidemark_jobs` (payload: a queue with new work, and
 * the job's id when one statement inserted a single one: `<queue> <id>`) and
 * `tidemark_cancel` (payload: a job id) and `tidemark_queues` (payload: a queue paused, resumed or changed). If the connection drops it reconnects with backoff and then
 * reports `onReconnect`, because notifications sent meanwhile are lost; polling covers the gap.
 */
import pg from 'pg';
import type { Logger } from '../log.ts';
import { Channel, listen } from '../store/channels.ts';

export interface ListenerEvents {
  /** `jobId`: the single job a statement inserted, when the wake-up names it. */
  onJobs(queue: string, jobId: number | undefined): void;
  onCancel(jobId: number): void;
  onQueueChange(queue: string): void;
  onReconnect(): void;
}

export class Listener {
  readonly #url: string;
  readonly #events: ListenerEvents;
  readonly #log: Logger;
  #client: pg.Client | undefined;
  #stopped = false;
  #retryTimer: NodeJS.Timeout | undefined;

  constructor(url: string, events: ListenerEvents, log: Logger) {
    this.#url = url;
    this.#events = events;
    this.#log = log;
  }

  /** Resolves once listening (or rejects if the first connection fails). */
  async start(): Promise<void> {
    await this.#connect();
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#url, application_name: 'tidemark-worker-listen' });
    client.on('notification', (msg) => {
      if (msg.channel === Channel.jobs && msg.payload !== undefined) {
        const space = msg.payload.indexOf(' ');
        if (space < 0) this.#events.onJobs(msg.payload, undefined);
        else this.#events.onJobs(msg.payload.slice(0, space), Number(msg.payload.slice(space + 1)));
      } else if (msg.channel === Channel.cancel && msg.payload !== undefined) {
        this.#events.onCancel(Number(msg.payload));
      } else if (msg.channel === Channel.queues && msg.payload !== undefined) {
        this.#events.onQueueChange(msg.payload);
      }
    });
    client.on('error', (error) => {
      this.#log.warn({ err: error }, 'listen connection lost; reconnecting, polling meanwhile');
      this.#scheduleReconnect(client, 100);
    });
    client.on('end', () => this.#scheduleReconnect(client, 100));
    await client.connect();
    await listen(client, [Channel.jobs, Channel.cancel, Channel.queues]);
    this.#client = client;
  }

  #scheduleReconnect(dead: pg.Client, delayMs: number): void {
    if (this.#stopped || this.#client !== dead || this.#retryTimer !== undefined) return;
    this.#client = undefined;
    dead.removeAllListeners('end');
    void dead.end().catch(() => undefined);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      if (this.#stopped) return;
      this.#connect().then(
        () => this.#events.onReconnect(),
        (error: unknown) => {
          this.#log.warn({ err: error }, 'listen reconnect failed');
          const placeholder = new pg.Client({ connectionString: this.#url });
          this.#client = placeholder;
          this.#scheduleReconnect(placeholder, Math.min(delayMs * 2, 5000));
        },
      );
    }, delayMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    const client = this.#client;
    this.#client = undefined;
    if (client !== undefined) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
  }
}
