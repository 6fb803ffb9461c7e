/**
 * `client.queues`: a queue's cluster-wide settings (queue-settings.ts), pause and resume, and the
 * audit of every change. The API's queue routes and the CLI's `tidemark queue` go through these
 * functions, so every entry point records the same rows.
 *
 * A paused queue is skipped by every claim (the worker's, the HTTP pull API's); jobs already running
 * finish, and workers hand back what they had claimed ahead. Each change commits with its audit row
 * and a notification that tells every worker at once.
 */
import { queueChangedNotify } from '../store/channels.ts';
import { queueChangeInsert, queueChangeList, type QueueChangeKind } from '../store/queue-changes.ts';
import { withTransaction, type Pool } from '../store/pool.ts';
import {
  queueGet,
  queueList,
  queueLock,
  queuePausedSet,
  queueUpsert,
  type QueueRow,
} from '../store/queues.ts';
import {
  QUEUE_DEFAULTS,
  QueueInputError,
  queueNameCheck,
  queueSettingsCheck,
  queueSettingsMergedCheck,
  type QueueSettingsInput,
} from './queue-settings.ts';

export interface Queue {
  name: string;
  maxRunning: number | null;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  timeoutMs: number | null;
  /** false: the queue has no row of its own and runs under the defaults. */
  configured: boolean;
  paused: boolean;
  pausedAt: Date | null;
  pausedBy: string | null;
}

/** What an audit row keeps of the queue before and after a change. */
export interface QueueSnapshot {
  maxRunning: number | null;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  timeoutMs: number | null;
  paused: boolean;
}

export interface QueueChange {
  at: Date;
  /** Who: `token <name> (<id>)` through the API, the CLI's or library's `by`, `worker <id>` for a config file. */
  by: string;
  change: QueueChangeKind;
  before: QueueSnapshot;
  after: QueueSnapshot;
}

export interface ChangeOptions {
  /** Recorded as who made the change. Default: the client's (`library` unless given to it). */
  by?: string;
}

function queueOf(name: string, row: QueueRow | undefined): Queue {
  if (row === undefined) {
    return { name, ...QUEUE_DEFAULTS, configured: false, paused: false, pausedAt: null, pausedBy: null };
  }
  return {
    name: row.name,
    maxRunning: row.maxRunning,
    maxAttempts: row.maxAttempts,
    backoffBaseMs: row.backoffBaseMs,
    backoffMaxMs: row.backoffMaxMs,
    timeoutMs: row.timeoutMs,
    configured: true,
    paused: row.pausedAt !== null,
    pausedAt: row.pausedAt,
    pausedBy: row.pausedBy,
  };
}

function snapshot(q: Queue): QueueSnapshot {
  return {
    maxRunning: q.maxRunning,
    maxAttempts: q.maxAttempts,
    backoffBaseMs: q.backoffBaseMs,
    backoffMaxMs: q.backoffMaxMs,
    timeoutMs: q.timeoutMs,
    paused: q.paused,
  };
}

function byCheck(by: unknown): string {
  if (typeof by !== 'string' || by.length === 0 || by.length > 200) {
    throw new QueueInputError('by', 'must be a non-empty string of at most 200 characters');
  }
  return by;
}

/**
 * Changes a queue's settings (fields left out keep their value) and records the change, if any.
 * `created`: the queue had no row before. Throws QueueInputError naming the field; nothing written then.
 */
export async function queueSettingsApply(
  pool: Pool,
  name: string,
  settings: QueueSettingsInput,
  by: string,
): Promise<{ queue: Queue; created: boolean }> {
  queueNameCheck(name);
  const change = queueSettingsCheck(settings);
  byCheck(by);
  return withTransaction(pool, async (tx) => {
    const existing = await queueGet(tx, name);
    const before = queueOf(name, existing === undefined ? undefined : await queueLock(tx, name));
    const merged = { ...before, ...change };
    queueSettingsMergedCheck(merged);
    const after = queueOf(name, (await queueUpsert(tx, name, merged)).row);
    if (JSON.stringify(snapshot(before)) !== JSON.stringify(snapshot(after))) {
      await queueChangeInsert(tx, {
        queue: name,
        by,
        change: 'update',
        before: snapshot(before),
        after: snapshot(after),
      });
      await queueChangedNotify(tx, name);
    }
    return { queue: after, created: existing === undefined };
  });
}

async function pausedSet(pool: Pool, name: string, paused: boolean, by: string): Promise<Queue> {
  queueNameCheck(name);
  byCheck(by);
  return withTransaction(pool, async (tx) => {
    const existing = await queueGet(tx, name);
    // Resuming a queue that has no row changes nothing: it was never paused.
    if (!paused && existing === undefined) return queueOf(name, undefined);
    const before = queueOf(name, existing === undefined ? undefined : await queueLock(tx, name));
    if (before.paused === paused) return before;
    if (existing === undefined) await queueLock(tx, name);
    const after = queueOf(name, await queuePausedSet(tx, name, paused ? by : null));
    const kind: QueueChangeKind = paused ? 'pause' : 'resume';
    await queueChangeInsert(tx, {
      queue: name,
      by,
      change: kind,
      before: snapshot(before),
      after: snapshot(after),
    });
    await queueChangedNotify(tx, name);
    return after;
  });
}

export class QueueClient {
  readonly #pool: Pool;
  readonly #by: string;

  /** `by`: who the changes made through this client are recorded as (default `library`). */
  constructor(pool: Pool, by = 'library') {
    this.#pool = pool;
    this.#by = byCheck(by);
  }

  /** Queues with settings of their own (or paused once), by name. */
  async list(): Promise<Queue[]> {
    return (await queueList(this.#pool)).map((row) => queueOf(row.name, row));
  }

  /** Any valid name answers: a queue without a row runs under the defaults (`configured: false`). */
  async get(name: string): Promise<Queue> {
    queueNameCheck(name);
    return queueOf(name, await queueGet(this.#pool, name));
  }

  /** Every claim skips the queue from the commit on; running jobs finish. Pausing a paused queue changes nothing. */
  pause(name: string, options: ChangeOptions = {}): Promise<Queue> {
    return pausedSet(this.#pool, name, true, options.by ?? this.#by);
  }

  resume(name: string, options: ChangeOptions = {}): Promise<Queue> {
    return pausedSet(this.#pool, name, false, options.by ?? this.#by);
  }

  /** Changes the settings given (queue-settings.ts for the shape); the others keep their value. */
  async update(name: string, settings: QueueSettingsInput, options: ChangeOptions = {}): Promise<Queue> {
    return (await queueSettingsApply(this.#pool, name, settings, options.by ?? this.#by)).queue;
  }

  /** The queue's pauses, resumes and settings changes, newest first. */
  async changes(name: string, options: { limit?: number } = {}): Promise<QueueChange[]> {
    queueNameCheck(name);
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      throw new QueueInputError('limit', `must be an integer from 1 to 1000, got ${JSON.stringify(limit)}`);
    }
    const rows = await queueChangeList(this.#pool, name, limit);
    return rows.map((r) => ({
      at: r.at,
      by: r.by,
      change: r.change,
      before: r.before as unknown as QueueSnapshot,
      after: r.after as unknown as QueueSnapshot,
    }));
  }
}
