/**
 * GET /metrics: Prometheus text. Request counts and latencies are kept here; queue depth, running,
 * dead, schedule lag and leader state are read from the database at scrape time. The scheduler's and
 * workers' in-process metrics (tick duration, claim latency, outcomes) are added when handed over
 * (process-metrics.ts), and anything registered on prom-client's default registry is appended.
 */
import { Counter, Gauge, Histogram, Registry, register as defaultRegistry } from 'prom-client';
import { jobSliceIdsLeft, jobSliceList } from '../store/job-slices.ts';
import type { Pool } from '../store/pool.ts';
import { occurrenceLagSince, occurrenceLastId } from '../store/occurrence-lag.ts';
import { retentionCountList } from '../store/retention.ts';
import {
  historyOldestRows,
  jobCountOpenByQueueState,
  leaseList,
  scheduleLagSeconds,
} from '../store/stats.ts';
import { registerProcessMetrics } from './process-metrics.ts';

export interface ApiMetrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  duration: Histogram<'method' | 'route'>;
  render(): Promise<{ contentType: string; body: string }>;
}

// At 30,000 schedules a minute a 15 s scrape finds ~7,500 new occurrences; a scrape reads at most
// 200,000 and leaves the rest for the next, so a long pause never makes one scrape slow.
const LEDGER_PAGE = 20_000;
const LEDGER_PAGES_PER_SCRAPE = 10;

export function createApiMetrics(pool: Pool): ApiMetrics {
  const registry = new Registry();
  const requests = new Counter({
    name: 'tidemark_http_requests_total',
    help: 'HTTP requests answered, by route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'tidemark_http_request_duration_seconds',
    help: 'HTTP request latency, by route template',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const jobs = new Gauge({
    name: 'tidemark_jobs',
    help: 'Jobs per queue in each open state (scheduled, available, running) and dead',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
  });
  const backlog = new Gauge({
    name: 'tidemark_backlog_depth',
    help: 'Jobs due and waiting for a worker, per queue',
    labelNames: ['queue'] as const,
    registers: [registry],
  });
  const running = new Gauge({
    name: 'tidemark_running_jobs',
    help: 'Jobs currently held by a worker, per queue',
    labelNames: ['queue'] as const,
    registers: [registry],
  });
  const dead = new Gauge({
    name: 'tidemark_dead_jobs',
    help: 'Jobs in the dead letter, per queue',
    labelNames: ['queue'] as const,
    registers: [registry],
  });
  const lag = new Gauge({
    name: 'tidemark_schedule_lag_seconds',
    help: 'Age of the oldest due schedule not yet materialised (0 when the scheduler is caught up)',
    registers: [registry],
  });
  const epoch = new Gauge({
    name: 'tidemark_leader_epoch',
    help: 'Fencing epoch of each leader lease',
    labelNames: ['lease'] as const,
    registers: [registry],
  });
  const held = new Gauge({
    name: 'tidemark_leader_held',
    help: '1 when the lease has an unexpired holder (judged by the database clock)',
    labelNames: ['lease', 'holder'] as const,
    registers: [registry],
  });
  const oldest = new Gauge({
    name: 'tidemark_history_oldest_row_age_seconds',
    help: 'Age of the oldest row left in each history table (levels off at the retention period)',
    labelNames: ['table'] as const,
    registers: [registry],
  });
  const sliceIdsLeft = new Gauge({
    name: 'tidemark_job_slice_ids_left',
    help: 'Job ids left before the last slice of succeeded jobs ends; below 0, succeeded jobs go to the default partition (the maintenance role is not running)',
    registers: [registry],
  });
  const sliceCount = new Gauge({
    name: 'tidemark_job_slices',
    help: 'Slices of succeeded jobs attached (the default partition aside); levels off at what the retention period holds once the maintenance role drops emptied ones',
    registers: [registry],
  });

  const pruned = new Counter({
    name: 'tidemark_retention_pruned_rows_total',
    help: 'History rows deleted by retention, per table, whichever replica pruned them',
    labelNames: ['table'] as const,
    registers: [registry],
  });

  const occurrenceLag = new Histogram({
    name: 'tidemark_occurrence_lag_seconds',
    help: 'How late each scheduled occurrence was materialised (materialised_at - fire_at), from the ledger',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  // The ledger is read forward from where the last scrape stopped (a primary-key range), so the
  // histogram counts every occurrence exactly once per API process, whichever scheduler wrote it.
  // It starts at the ledger's end: like any Prometheus counter, it counts from the process's start.
  let ledgerCursor: number | undefined;
  async function observeLedger(): Promise<void> {
    if (ledgerCursor === undefined) {
      ledgerCursor = await occurrenceLastId(pool);
      return;
    }
    for (let page = 0; page < LEDGER_PAGES_PER_SCRAPE; page++) {
      const rows = await occurrenceLagSince(pool, ledgerCursor, LEDGER_PAGE);
      for (const row of rows) occurrenceLag.observe(row.lagSeconds);
      ledgerCursor = rows.at(-1)?.id ?? ledgerCursor;
      if (rows.length < LEDGER_PAGE) return;
    }
  }

  registerProcessMetrics(registry);

  async function collect(): Promise<void> {
    const [counts, lagS, leases, oldestRows, prunedRows, slices] = await Promise.all([
      jobCountOpenByQueueState(pool),
      scheduleLagSeconds(pool),
      leaseList(pool),
      historyOldestRows(pool),
      retentionCountList(pool),
      jobSliceList(pool),
      observeLedger(),
    ]);
    sliceIdsLeft.set(await jobSliceIdsLeft(pool, slices));
    sliceCount.set(slices.filter((s) => s.to !== null).length);
    for (const g of [jobs, backlog, running, dead, epoch, held, oldest, pruned]) g.reset();
    for (const row of prunedRows) pruned.inc({ table: row.table }, row.rows);
    for (const row of oldestRows)
      if (row.ageSeconds !== null) oldest.set({ table: row.table }, row.ageSeconds);
    for (const row of counts) {
      jobs.set({ queue: row.queue, state: row.state }, row.n);
      if (row.state === 'available') backlog.set({ queue: row.queue }, row.n);
      if (row.state === 'running') running.set({ queue: row.queue }, row.n);
      if (row.state === 'dead') dead.set({ queue: row.queue }, row.n);
    }
    lag.set(lagS);
    for (const lease of leases) {
      epoch.set({ lease: lease.name }, lease.epoch);
      held.set({ lease: lease.name, holder: lease.holder ?? '' }, lease.held ? 1 : 0);
    }
  }

  return {
    registry,
    requests,
    duration,
    async render() {
      await collect();
      const own = await registry.metrics();
      const others = await defaultRegistry.metrics();
      return { contentType: registry.contentType, body: others === '' ? own : `${own}\n${others}` };
    },
  };
}
