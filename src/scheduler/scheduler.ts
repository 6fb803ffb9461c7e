/**
 * The scheduler: turns registered schedules into durable occurrences. Any number may run; the one
 * holding the lease leads, the others stand by and contend when it expires or is released.
 *
 * The lease is a term (holder, epoch, expiry by the database's clock). The leader trusts its term
 * only until `sent + ttl − margin` on its monotonic clock, where `sent` is when the acquiring or
 * renewing statement left this process: the database computed the expiry after that, so the term
 * cannot have ended earlier. Every materialising statement is conditioned on the epoch in the
 * database as well (occurrenceMaterialise), so even a leader that has not noticed it was deposed
 * writes nothing. A failed renewal, a renewal that outlives the trust window, or a fenced-out write
 * ends leadership at once and calls `onLost` (the CLI exits non-zero; a supervisor restarts it).
 *
 * Each tick pops what is due from the due index, plans each schedule (misfire, overlap, jitter),
 * writes the occurrences in batches, and puts each schedule back at its next fire time. Schedule
 * edits arrive by LISTEN/NOTIFY, with a periodic resync of recently edited rows behind it. With the
 * heap, schedules due within planAheadMs are planned before their fire time, so at the fire time
 * only the write is left (planAhead in plan.ts says when such a plan still holds).
 */
import { ConfigError } from '../errors.ts';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { systemClock } from '../clock.ts';
import { createLogger, type Logger } from '../log.ts';
import { Channel, listen, unlistenAll } from '../store/channels.ts';
import { dbClockNow, leaseAcquire, leaseRelease, leaseRenew } from '../store/leases.ts';
import {
  occurrenceEncodeAhead,
  occurrenceMaterialise,
  type Fence,
  type OccurrenceInput,
  type ScheduleAdvance,
} from '../store/occurrences.ts';
import { withMovedRowRetry, type Pool, type PoolClient } from '../store/pool.ts';
import { scheduledJobActivity, type ScheduledJobActivity } from '../store/scheduled-jobs.ts';
import {
  scheduleGetMany,
  scheduleListActivePage,
  scheduleListChangedSince,
  scheduleMarkBroken,
  type ChangeCursor,
  type ScheduleRow,
} from '../store/schedules.ts';
import { DbDueIndex } from './db-index.ts';
import type { DueEntry, DueIndex, DueIndexKind } from './due-index.ts';
import { HeapDueIndex } from './heap-index.ts';
import { SchedulerMetrics } from './metrics.ts';
import {
  aheadPlanAt,
  compileRow,
  planAhead,
  planSchedule,
  type AheadPlan,
  type CachedSchedule,
} from './plan.ts';
import { SchedulerTime, type TimeSourceKind } from './time-source.ts';
import { WheelDueIndex } from './wheel-index.ts';

export interface SchedulerOptions {
  pool: Pool;
  /** Default: pino to stderr, at TIDEMARK_LOG_LEVEL (info), as the Worker's. */
  log?: Logger;
  clock?: Clock;
  /** Names this process in the lease; default host:pid:random. */
  holder?: string;
  leaseName?: string;
  leaseTtlMs?: number;
  renewEveryMs?: number;
  tickMs?: number;
  dueIndex?: DueIndexKind;
  timeSource?: TimeSourceKind;
  /** Occurrences per materialising statement. */
  batchSize?: number;
  /** Materialising statements a tick runs at once when more than one batch is due (a burst). */
  writers?: number;
  /** How often the leader re-reads schedules edited since its last pass (backs up NOTIFY). */
  resyncMs?: number;
  /** How far ahead of their fire time due schedules are planned (heap index only); 0 turns it off. */
  planAheadMs?: number;
  /**
   * false: every instance materialises without a lease (`--unsafe-no-election`); exists only to
   * prove that the unique key alone prevents duplicates.
   */
  election?: boolean;
  /** Leadership ended without stop(): lease lost, renewal failed, or a write was fenced out. */
  onLost?: (reason: string) => void;
  /** A term began (epoch null without election). */
  onLead?: (epoch: number | null) => void;
  /** Called after every tick that did work (tests and benches observe progress). */
  onTick?: (tick: { occurrences: number; durationMs: number }) => void;
}

export const SCHEDULER_DEFAULTS = {
  leaseName: 'scheduler',
  leaseTtlMs: 10_000,
  renewEveryMs: 3_000,
  tickMs: 1_000,
  dueIndex: 'heap',
  timeSource: 'db',
  // 2,500 rows per statement, 2 at once: a 5,000 burst is one pop and two statements, written in
  // 0.67× the time of 4 × 1,000 (bench/scheduler.ts burst), fewer statements contending for the
  // cores. Steady load (30,000 a minute) writes ~25 rows a tick, so these only shape bursts. A
  // 2,500-row statement holds the lease row key-share lock ~0.5 s; renewals pass it (0009).
  batchSize: 2_500,
  writers: 2,
  resyncMs: 30_000,
  // Longer than a tick, so some tick always falls between planAheadMs and the fire time's approach.
  // A 5,000 burst planned (and serialised) ahead is written in 0.4× the time of one planned at its
  // fire time (bench/scheduler.ts burst).
  planAheadMs: 2_000,
} as const;

/**
 * With an index that knows its earliest entry (the heap) the leader wakes for it instead of waiting
 * out the tick, but while occurrences flow no sooner than this after a tick that wrote: at 500 fires
 * a second (30,000 once-a-minute schedules) that writes ~25 per statement, 20 statements a second,
 * instead of 500 single-row ones.
 */
const COALESCE_MS = 50;

/** Most schedules one tick plans ahead; the rest wait for the next tick or are planned when due. */
const PLAN_AHEAD_LIMIT = 20_000;
/** Schedules planned ahead between two yields to the event loop, so a renewal never waits long. */
const PLAN_AHEAD_CHUNK = 500;

/** Page size for loading the schedule table into memory when a term starts. */
const LOAD_PAGE = 5_000;
/**
 * Most edited schedules one resync pass reads; after a full page the next tick continues after the
 * last one. Small, since the pass runs inside a tick: after a bulk insert of 30,000 schedules a page
 * of 10,000 full rows held a tick up to ~700 ms (lag spikes at steady load).
 */
const RESYNC_PAGE = 1_000;

export class Scheduler {
  readonly metrics = new SchedulerMetrics();
  readonly holder: string;
  readonly #pool: Pool;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #leaseName: string;
  readonly #ttlMs: number;
  readonly #renewMs: number;
  readonly #tickMs: number;
  readonly #indexKind: DueIndexKind;
  readonly #batchSize: number;
  readonly #writers: number;
  readonly #resyncMs: number;
  readonly #planAheadMs: number;
  readonly #election: boolean;
  readonly #onLost: (reason: string) => void;
  readonly #onLead: (epoch: number | null) => void;
  readonly #onTick: ((tick: { occurrences: number; durationMs: number }) => void) | undefined;
  readonly time: SchedulerTime;

  #running = false;
  #term: { epoch: number; trustedUntilMono: number } | null = null;
  #index: DueIndex | null = null;
  readonly #cache = new Map<string, CachedSchedule>();
  readonly #pendingRefresh = new Set<string>();
  /** Plans made before the fire time, by schedule id; an edit of the schedule drops its plan. */
  readonly #ahead = new Map<string, AheadPlan>();
  /** Schedules whose spec did not compile, to be taken out of the due set in the database. */
  readonly #broken = new Map<string, { id: string; version: number; error: string }>();
  #lastResyncMono = 0;
  #lastPlanAheadMono = -Infinity;
  #resyncCursor: ChangeCursor | null = null;
  /**
   * The control connection: LISTEN and every lease statement. Kept apart from the pool the ticks
   * write through, so a renewal never waits behind a tick's batch for a connection, and a broken
   * control connection ends the term (its LISTEN would be deaf from then on).
   */
  #listener: PoolClient | null = null;
  #timers = new Set<NodeJS.Timeout>();
  #tickInFlight: Promise<number> | null = null;
  #wake: (() => void) | null = null;

  constructor(options: SchedulerOptions) {
    this.#pool = withMovedRowRetry(options.pool);
    this.#log = options.log ?? createLogger('scheduler');
    this.#clock = options.clock ?? systemClock;
    this.holder = options.holder ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.#leaseName = options.leaseName ?? SCHEDULER_DEFAULTS.leaseName;
    this.#ttlMs = options.leaseTtlMs ?? SCHEDULER_DEFAULTS.leaseTtlMs;
    this.#renewMs = options.renewEveryMs ?? SCHEDULER_DEFAULTS.renewEveryMs;
    this.#tickMs = options.tickMs ?? SCHEDULER_DEFAULTS.tickMs;
    this.#indexKind = options.dueIndex ?? SCHEDULER_DEFAULTS.dueIndex;
    this.#batchSize = options.batchSize ?? SCHEDULER_DEFAULTS.batchSize;
    this.#writers = options.writers ?? SCHEDULER_DEFAULTS.writers;
    this.#resyncMs = options.resyncMs ?? SCHEDULER_DEFAULTS.resyncMs;
    this.#planAheadMs = options.planAheadMs ?? SCHEDULER_DEFAULTS.planAheadMs;
    this.#election = options.election ?? true;
    this.#onLost = options.onLost ?? (() => undefined);
    this.#onTick = options.onTick;
    this.#onLead = options.onLead ?? (() => undefined);
    if (!(this.#renewMs < this.#ttlMs)) {
      throw new ConfigError(
        `renewEveryMs: ${this.#renewMs} must be shorter than leaseTtlMs (${this.#ttlMs})`,
      );
    }
    this.time = new SchedulerTime(options.timeSource ?? SCHEDULER_DEFAULTS.timeSource, this.#clock, (jump) =>
      this.#log.warn(
        { jump },
        `clock jump of ${Math.round(jump.deltaMs)} ms seen on the ${jump.source} clock`,
      ),
    );
  }

  get isLeader(): boolean {
    return this.#term !== null || (!this.#election && this.#running && this.#index !== null);
  }

  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    await this.#listenForRelease();
    if (this.#election) {
      this.metrics.role = 'standby';
      this.#schedule(0, () => this.#contend());
    } else {
      this.#log.warn('election disabled (--unsafe-no-election): every instance materialises');
      await this.#sampleDbClock();
      await this.#beginTerm(null);
    }
  }

  /** Graceful: finishes the tick in flight, releases the lease so a standby takes over at once. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    this.#clearTimers();
    await this.#tickInFlight;
    const term = this.#term;
    this.#term = null;
    if (term !== null) {
      try {
        await leaseRelease(this.#control(), this.#leaseName, this.holder, term.epoch);
        this.#log.info({ epoch: term.epoch }, 'lease released');
      } catch (error) {
        this.#log.warn({ err: error }, 'lease release failed; standbys take over when it expires');
      }
    }
    await this.#closeListener();
    this.metrics.role = 'stopped';
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  // ——— standby ———

  async #listenForRelease(): Promise<void> {
    const client = await this.#pool.connect();
    this.#listener = client;
    client.on('notification', (msg) => {
      if (msg.channel === Channel.lease && this.#term === null && this.#running) this.#wake?.();
      if (msg.channel === Channel.schedules && msg.payload !== undefined)
        this.#pendingRefresh.add(msg.payload);
    });
    client.on('error', (error) => this.#lose(`listen connection failed: ${error.message}`));
    await listen(client, [Channel.lease]);
  }

  #control(): PoolClient {
    if (this.#listener === null) throw new Error('scheduler control connection is closed');
    return this.#listener;
  }

  async #closeListener(): Promise<void> {
    const client = this.#listener;
    this.#listener = null;
    if (client === null) return;
    try {
      await unlistenAll(client);
      client.release();
    } catch {
      client.release(true);
    }
  }

  async #contend(): Promise<void> {
    if (!this.#running || this.#term !== null) return;
    const sent = this.#clock.monotonicMs();
    try {
      const term = await leaseAcquire(this.#control(), this.#leaseName, this.holder, this.#ttlMs);
      if (term !== null && this.#running) {
        this.time.sampleDb(term.dbNow, sent);
        this.#term = { epoch: term.epoch, trustedUntilMono: this.#trustedUntil(sent) };
        await this.#beginTerm(term.epoch);
        return;
      }
      await this.#sampleDbClock();
    } catch (error) {
      this.#log.warn({ err: error }, 'lease acquire attempt failed');
    }
    if (!this.#running) return;
    // Standbys contend on expiry: they poll every tick (so a takeover lands within TTL + tick of the
    // leader's last renewal), and at once when the leader releases.
    const timer = this.#schedule(this.#tickMs, () => this.#contend());
    this.#wake = () => {
      this.#wake = null;
      clearTimeout(timer);
      this.#timers.delete(timer);
      this.#schedule(0, () => this.#contend());
    };
  }

  #trustedUntil(sentMono: number): number {
    // Clock rates differ a little between hosts; give up a tenth of the TTL (at least 100 ms) to that.
    const margin = Math.max(100, this.#ttlMs / 10);
    return sentMono + this.#ttlMs - margin;
  }

  async #sampleDbClock(): Promise<void> {
    if (this.time.kind !== 'db') return;
    const sent = this.#clock.monotonicMs();
    this.time.sampleDb(await dbClockNow(this.#control()), sent);
  }

  // ——— leader ———

  async #beginTerm(epoch: number | null): Promise<void> {
    this.#wake = null;
    this.metrics.role = 'leader';
    this.metrics.epoch = epoch;
    this.#log.info({ epoch, holder: this.holder, dueIndex: this.#indexKind }, 'leading');
    // Renewing starts before the load: loading 30,000 schedules on a busy host can take longer
    // than a term (measured: > 9 s at load average 16), and a term must never lapse unrenewed.
    if (epoch !== null) this.#schedule(this.#renewMs, () => this.#renew());
    else this.#schedule(this.#renewMs, () => this.#resampleLoop());
    try {
      await listen(this.#control(), [Channel.schedules]);
      await this.#loadAll();
    } catch (error) {
      this.#lose(`could not load schedules: ${errorMessage(error)}`);
      return;
    }
    if (!this.#running) return;
    this.#onLead(epoch);
    this.#schedule(0, () => this.#tickLoop());
  }

  async #loadAll(): Promise<void> {
    const nowMono = this.#clock.monotonicMs();
    this.#cache.clear();
    this.#pendingRefresh.clear();
    this.#ahead.clear();
    this.#lastPlanAheadMono = -Infinity;
    const index = this.#makeIndex();
    let after: string | null = null;
    // The resync reads edits from this instant on; take it before the load so none fall between.
    this.#resyncCursor = this.#changeCursorFromNow();
    for (;;) {
      const page = await scheduleListActivePage(this.#pool, after, LOAD_PAGE);
      for (const row of page) this.#cacheRow(row, index);
      const last = page.at(-1);
      if (last === undefined || page.length < LOAD_PAGE) break;
      after = last.id;
    }
    this.#index = index;
    this.#lastResyncMono = nowMono;
    this.#log.info({ schedules: this.#cache.size }, 'schedules loaded');
  }

  #makeIndex(): DueIndex {
    switch (this.#indexKind) {
      case 'heap':
        return new HeapDueIndex();
      case 'wheel':
        return new WheelDueIndex({ startMs: this.time.nowMs() });
      case 'db':
        return new DbDueIndex(this.#pool);
    }
  }

  /** Puts a row in the cache and the index, or takes it out of both when it cannot fire. */
  #cacheRow(row: ScheduleRow, index: DueIndex): void {
    this.#ahead.delete(row.id);
    if (row.paused || row.nextFireAt === null) {
      this.#cache.delete(row.id);
      index.delete(row.id);
      return;
    }
    try {
      this.#cache.set(row.id, { row, compiled: compileRow(row) });
      index.set({ id: row.id, dueMs: row.nextFireAt.getTime(), version: row.version });
    } catch (error) {
      // Stored specs were valid when written; one that no longer compiles must not stop the others,
      // and must not stay due: the db index would pop it again every tick (and a page full of them
      // would stall the tick), so #flushBroken records the error and clears next_fire_at.
      this.#log.error(
        { err: error, schedule: row.id },
        'schedule does not compile; taking it out of the due set',
      );
      this.#cache.delete(row.id);
      index.delete(row.id);
      this.#broken.set(row.id, { id: row.id, version: row.version, error: errorMessage(error) });
    }
  }

  async #flushBroken(): Promise<void> {
    if (this.#broken.size === 0) return;
    const broken = [...this.#broken.values()];
    this.#broken.clear();
    try {
      await scheduleMarkBroken(this.#pool, broken);
    } catch (error) {
      // Not marked: the next load or pop finds them again and retries.
      this.#log.warn({ err: error, schedules: broken.length }, 'could not record broken schedules');
    }
  }

  async #refresh(ids: string[]): Promise<void> {
    const index = this.#index;
    if (index === null || ids.length === 0) return;
    const rows = await scheduleGetMany(this.#pool, ids);
    const found = new Set(rows.map((r) => r.id));
    for (const id of ids) {
      if (!found.has(id)) {
        this.#cache.delete(id);
        this.#ahead.delete(id);
        index.delete(id);
      }
    }
    for (const row of rows) this.#cacheRow(row, index);
  }

  async #renew(): Promise<void> {
    const term = this.#term;
    if (term === null || !this.#running) return;
    const sent = this.#clock.monotonicMs();
    let renewed;
    try {
      renewed = await withDeadline(
        leaseRenew(this.#control(), this.#leaseName, this.holder, term.epoch, this.#ttlMs),
        Math.max(0, term.trustedUntilMono - sent),
      );
    } catch (error) {
      this.#lose(`lease renewal failed: ${errorMessage(error)}`);
      return;
    }
    if (this.#term !== term) return;
    if (renewed === null) {
      this.#lose(`lease lost: epoch ${term.epoch} is no longer held by ${this.holder}`);
      return;
    }
    this.time.sampleDb(renewed.dbNow, sent);
    term.trustedUntilMono = this.#trustedUntil(sent);
    this.#schedule(this.#renewMs, () => this.#renew());
  }

  async #resampleLoop(): Promise<void> {
    if (!this.#running) return;
    try {
      await this.#sampleDbClock();
    } catch (error) {
      this.#log.warn({ err: error }, 'database clock sample failed');
    }
    this.#schedule(this.#renewMs, () => this.#resampleLoop());
  }

  #lose(reason: string): void {
    if (!this.#running) return;
    this.#running = false;
    this.#term = null;
    this.#index = null;
    this.#ahead.clear();
    this.#clearTimers();
    this.metrics.role = 'lost';
    this.#log.error({ reason }, 'leadership lost; stopping');
    void this.#closeListener();
    this.#onLost(reason);
  }

  async #tickLoop(): Promise<void> {
    if (!this.#running) return;
    const started = this.#clock.monotonicMs();
    const tick = this.#tick();
    this.#tickInFlight = tick;
    let written = 0;
    try {
      written = await tick;
    } finally {
      this.#tickInFlight = null;
    }
    if (!this.#running) return;
    // Ticks are paced on the monotonic clock: a wall-clock step neither bunches nor stalls them.
    const elapsed = this.#clock.monotonicMs() - started;
    let wait = this.#tickMs - elapsed;
    const nextDue = this.#index?.nextDueMs?.() ?? null;
    if (nextDue !== null) {
      // Coalesce while occurrences flow (or something is still due after this tick); after an idle
      // tick, wake at the fire time itself: a burst due at one instant then starts its write on
      // time instead of up to COALESCE_MS late.
      const untilDue = nextDue - this.time.nowMs();
      wait = Math.min(wait, written === 0 && untilDue > 0 ? untilDue : Math.max(COALESCE_MS, untilDue));
    }
    this.#schedule(Math.max(0, wait), () => this.#tickLoop());
  }

  /** One tick; returns the occurrence rows it wrote. */
  async #tick(): Promise<number> {
    const started = this.#clock.monotonicMs();
    let written = 0;
    try {
      if (!this.#stillTrusted()) return 0;
      if (started - this.#lastResyncMono >= this.#resyncMs) await this.#resync();
      if (this.#pendingRefresh.size > 0) {
        const ids = [...this.#pendingRefresh];
        this.#pendingRefresh.clear();
        await this.#refresh(ids);
      }
      await this.#flushBroken();
      for (;;) {
        const index = this.#index;
        if (index === null || !this.#stillTrusted()) return written;
        const nowMs = this.time.nowMs();
        const limit = this.#batchSize * this.#writers;
        // An in-memory index is popped one batch at a time, so the first statement leaves before the
        // rest is popped and planned. The db index is read once: a second read would return the
        // first batch's schedules again, their advance not yet committed.
        const perPop = index.kind === 'db' ? limit : this.#batchSize;
        const batches: Promise<number>[] = [];
        let popped = 0;
        while (popped < limit) {
          if (popped > 0) await yieldToEventLoop();
          const entries = await index.popDue(nowMs, perPop);
          popped += entries.length;
          for (let i = 0; i < entries.length; i += this.#batchSize) {
            if (i > 0) await yieldToEventLoop();
            const batch = this.#materialise(entries.slice(i, i + this.#batchSize), nowMs);
            // Handled below, after the other batches; until then a rejection must not count as unhandled.
            batch.catch(() => undefined);
            batches.push(batch);
          }
          if (entries.length < perPop) break;
        }
        for (const outcome of await Promise.allSettled(batches)) {
          if (outcome.status === 'rejected') throw outcome.reason;
          written += outcome.value;
        }
        if (popped < limit) break;
      }
    } catch (error) {
      // A failed batch changed nothing (one statement); its schedules are reloaded and retried next tick.
      this.#log.error({ err: error }, 'tick failed');
      if (this.#running && this.#index !== null) {
        try {
          await this.#loadAll();
        } catch (reloadError) {
          this.#log.error({ err: reloadError }, 'reload after a failed tick failed');
        }
      }
    }
    const durationMs = this.#clock.monotonicMs() - started;
    this.metrics.recordTick(durationMs, written);
    if (written > 0) this.#onTick?.({ occurrences: written, durationMs });
    try {
      await this.#planAhead();
    } catch (error) {
      this.#log.warn({ err: error }, 'planning ahead failed; those schedules are planned when due');
    }
    return written;
  }

  /**
   * Plans the schedules due within planAheadMs as of their fire time (planAhead), leaving them in
   * the index: at the fire time the tick pops them as usual and takes the plan if it still holds.
   * Planning is synchronous work (measured ~20–80 µs a schedule on 2 loaded cores: 100–400 ms for a
   * 5,000-schedule burst) that would otherwise sit between the fire time and the write.
   */
  async #planAhead(): Promise<void> {
    const index = this.#index;
    if (index?.peekDue === undefined || this.#planAheadMs <= 0 || !this.#stillTrusted()) return;
    // A pass every quarter of the horizon plans everything at least 3/4 of it ahead, and at 20 ticks
    // a second (steady flow) saves walking the same ~planAheadMs × fire rate entries on every tick.
    const nowMono = this.#clock.monotonicMs();
    if (nowMono - this.#lastPlanAheadMono < this.#planAheadMs / 4) return;
    this.#lastPlanAheadMono = nowMono;
    const entries = index.peekDue(this.time.nowMs() + this.#planAheadMs, PLAN_AHEAD_LIMIT);
    let planned = 0;
    for (const e of entries) {
      const known = this.#ahead.get(e.id);
      if (known !== undefined && known.version === e.version && known.dueMs === e.dueMs) continue;
      const cached = this.#cache.get(e.id);
      if (
        cached === undefined ||
        cached.row.version !== e.version ||
        cached.row.nextFireAt?.getTime() !== e.dueMs
      ) {
        continue;
      }
      const ahead = planAhead(cached);
      if (ahead !== null) {
        occurrenceEncodeAhead(ahead.plan.items, [ahead.plan.advance]);
        this.#ahead.set(e.id, ahead);
      }
      if (++planned % PLAN_AHEAD_CHUNK === 0) {
        await yieldToEventLoop();
        if (this.#index !== index) return;
      }
    }
  }

  #stillTrusted(): boolean {
    if (!this.#running) return false;
    if (!this.#election) return true;
    const term = this.#term;
    if (term === null) return false;
    if (this.#clock.monotonicMs() >= term.trustedUntilMono) {
      this.#lose(`lease term ${term.epoch} outlived its trust window without a renewal`);
      return false;
    }
    return true;
  }

  async #resync(): Promise<void> {
    const cursor = this.#resyncCursor;
    this.#lastResyncMono = this.#clock.monotonicMs();
    if (cursor === null) return;
    const fresh = this.#changeCursorFromNow();
    const { rows, next } = await scheduleListChangedSince(this.#pool, cursor, RESYNC_PAGE);
    const index = this.#index;
    if (index === null) return;
    for (const row of rows) {
      const cached = this.#cache.get(row.id);
      if (cached === undefined || cached.row.version !== row.version) this.#cacheRow(row, index);
    }
    if (rows.length === RESYNC_PAGE && next !== null) {
      // A full page may have left later edits unread: resume right after the last one read, and on
      // the next tick rather than a resync period later.
      this.#resyncCursor = next;
      this.#lastResyncMono = -Infinity;
    } else {
      this.#resyncCursor = fresh;
    }
  }

  /** Edits from a lease TTL ago on: any NOTIFY older than that has long been heard or lost. */
  #changeCursorFromNow(): ChangeCursor {
    return { at: new Date(this.time.nowMs() - this.#ttlMs).toISOString(), id: null };
  }

  /** Plans and writes one batch of due entries; returns the occurrence rows written. */
  async #materialise(entries: DueEntry[], nowMs: number): Promise<number> {
    const index = this.#index;
    if (index === null) return 0;
    const missing = entries.filter((e) => this.#cache.get(e.id)?.row.version !== e.version).map((e) => e.id);
    if (missing.length > 0) {
      await this.#refresh(missing);
      await this.#flushBroken();
    }
    const due: CachedSchedule[] = [];
    for (const e of entries) {
      const cached = this.#cache.get(e.id);
      if (
        cached === undefined ||
        cached.row.version !== e.version ||
        cached.row.nextFireAt?.getTime() !== e.dueMs
      ) {
        this.metrics.stale++;
        continue;
      }
      due.push(cached);
    }
    const guarded = due.filter((s) => s.row.overlapPolicy !== 'allow').map((s) => s.row.id);
    const activity =
      guarded.length > 0
        ? await scheduledJobActivity(this.#pool, guarded)
        : new Map<string, ScheduledJobActivity>();
    const items: OccurrenceInput[] = [];
    const advances: ScheduleAdvance[] = [];
    const lags: number[] = [];
    let plannedAhead = 0;
    for (const s of due) {
      const ahead = this.#ahead.get(s.row.id);
      this.#ahead.delete(s.row.id);
      const early = ahead === undefined ? null : aheadPlanAt(ahead, s.row, nowMs);
      if (early !== null) plannedAhead++;
      const plan = early ?? planSchedule(s, nowMs, activity.get(s.row.id));
      items.push(...plan.items);
      advances.push(plan.advance);
      lags.push(...plan.lagsMs);
    }
    if (advances.length === 0) return 0;
    const term = this.#term;
    const fence: Fence | null = this.#election
      ? term === null
        ? null
        : { lease: this.#leaseName, holder: this.holder, epoch: term.epoch }
      : null;
    if (this.#election && fence === null) return 0;
    // The same order in every writer keeps concurrent unfenced writers from deadlocking on the key.
    items.sort((a, b) =>
      a.scheduleId < b.scheduleId
        ? -1
        : a.scheduleId > b.scheduleId
          ? 1
          : a.fireAt.getTime() - b.fireAt.getTime(),
    );
    advances.sort((a, b) => (a.scheduleId < b.scheduleId ? -1 : a.scheduleId > b.scheduleId ? 1 : 0));
    const result = await occurrenceMaterialise(this.#pool, fence, items, advances);
    if (!result.fenced) {
      this.#lose(`write fenced out: epoch ${fence?.epoch} no longer holds the lease`);
      return 0;
    }
    this.metrics.occurrences += result.inserted;
    this.metrics.jobsEnqueued += result.jobs;
    this.metrics.conflicts += result.current - result.inserted;
    this.metrics.stale += items.length - result.current;
    this.metrics.plannedAhead += plannedAhead;
    for (const lag of lags) this.metrics.recordLag(lag);
    if (result.advanced !== advances.length || result.current !== items.length) {
      // Some schedule changed under us: take its current row instead of our idea of it.
      await this.#refresh(advances.map((a) => a.scheduleId));
      return result.inserted;
    }
    for (const a of advances) {
      const cached = this.#cache.get(a.scheduleId);
      if (cached === undefined) continue;
      cached.row.nextFireAt = a.nextFireAt;
      cached.row.lastFireAt = a.lastFireAt;
      if (a.nextFireAt === null) {
        this.#cache.delete(a.scheduleId);
        index.delete(a.scheduleId);
      } else {
        index.set({ id: a.scheduleId, dueMs: a.nextFireAt.getTime(), version: a.version });
      }
    }
    return result.inserted;
  }

  #schedule(ms: number, fn: () => Promise<void>): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn().catch((error: unknown) => this.#lose(`internal error: ${errorMessage(error)}`));
    }, ms);
    this.#timers.add(timer);
    return timer;
  }

  #clearTimers(): void {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#wake = null;
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Lets pending I/O (a statement just queued, a renewal's timer) run before going on. */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Resolves as `promise`, or rejects once `ms` have passed (the promise itself keeps running). */
function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within the ${Math.round(ms)} ms left of the term`)),
      ms,
    );
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
