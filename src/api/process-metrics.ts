/**
 * Metrics the scheduler and workers keep in their own process (tick duration, occurrence lag, claim
 * latency, outcomes), exported on /metrics of an API server in the same process. A process that runs
 * them beside the API (`tidemark dev`, or an application embedding both) hands them over with
 * `exportSchedulerMetrics` / `exportWorkerMetrics`; each returns a function that withdraws them.
 *
 * Latencies are Prometheus histograms (cumulative buckets counted since the process started), so
 * they aggregate across processes with histogram_quantile; counts are counters (`_total`).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { LATENCY_BOUNDS_S, type HistogramCounts } from '../histogram.ts';
import type { MaintenanceMetricsSnapshot } from '../maintenance/metrics.ts';
import type { SchedulerMetricsSnapshot } from '../scheduler/metrics.ts';
import type { QueueMetrics } from '../worker/metrics.ts';

const schedulers = new Set<{ snapshot(): SchedulerMetricsSnapshot }>();
const workers = new Set<{ metrics(): QueueMetrics[] }>();
const maintenances = new Set<{ snapshot(): MaintenanceMetricsSnapshot }>();

export function exportSchedulerMetrics(source: { snapshot(): SchedulerMetricsSnapshot }): () => void {
  schedulers.add(source);
  return () => schedulers.delete(source);
}

export function exportWorkerMetrics(source: { metrics(): QueueMetrics[] }): () => void {
  workers.add(source);
  return () => workers.delete(source);
}

export function exportMaintenanceMetrics(source: { snapshot(): MaintenanceMetricsSnapshot }): () => void {
  maintenances.add(source);
  return () => maintenances.delete(source);
}

type Labelled = { labels: Record<string, string>; counts: HistogramCounts };

interface ExportedValue {
  metricName: string;
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  value: number;
}

/**
 * A histogram whose buckets are counted elsewhere (the scheduler's and workers' BucketCounters) and
 * read at scrape time; sources with the same labels are summed. prom-client's registry renders a
 * metric through `getForPromString` (its `get` goes through it too), so that is what this replaces.
 */
class SnapshotHistogram extends Histogram<string> {
  readonly #name: string;
  readonly #help: string;
  readonly #read: () => Labelled[];

  constructor(registry: Registry, name: string, help: string, labelNames: string[], read: () => Labelled[]) {
    super({ name, help, labelNames, buckets: [...LATENCY_BOUNDS_S], registers: [registry] });
    this.#name = name;
    this.#help = help;
    this.#read = read;
  }

  getForPromString(): Promise<{
    name: string;
    help: string;
    type: 'histogram';
    aggregator: 'sum';
    values: ExportedValue[];
  }> {
    const merged = new Map<string, Labelled>();
    for (const item of this.#read()) {
      const key = JSON.stringify(item.labels);
      const seen = merged.get(key);
      if (seen === undefined) {
        merged.set(key, {
          labels: item.labels,
          counts: { ...item.counts, cumulative: [...item.counts.cumulative] },
        });
        continue;
      }
      seen.counts.sum += item.counts.sum;
      seen.counts.count += item.counts.count;
      item.counts.cumulative.forEach(
        (n, i) => (seen.counts.cumulative[i] = (seen.counts.cumulative[i] ?? 0) + n),
      );
    }
    const values: ExportedValue[] = [];
    const bucket = `${this.#name}_bucket`;
    for (const { labels, counts } of merged.values()) {
      counts.bounds.forEach((le, i) =>
        values.push({
          metricName: bucket,
          labels: { ...labels, le },
          sharedLabels: {},
          value: counts.cumulative[i] ?? 0,
        }),
      );
      values.push({
        metricName: bucket,
        labels: { ...labels, le: '+Inf' },
        sharedLabels: {},
        value: counts.count,
      });
      values.push({ metricName: `${this.#name}_sum`, labels, sharedLabels: {}, value: counts.sum });
      values.push({ metricName: `${this.#name}_count`, labels, sharedLabels: {}, value: counts.count });
    }
    return Promise.resolve({
      name: this.#name,
      help: this.#help,
      type: 'histogram',
      aggregator: 'sum',
      values,
    });
  }
}

/** What a registry of process metrics reads at scrape time. */
export interface ProcessMetricSources {
  /** Each left out: that role's metrics are not registered at all. */
  schedulers?: () => SchedulerMetricsSnapshot[];
  queues?: () => QueueMetrics[];
  maintenances?: () => MaintenanceMetricsSnapshot[];
}

/** Every source handed over with the export… functions above. */
const EXPORTED: ProcessMetricSources = {
  schedulers: () => [...schedulers].map((s) => s.snapshot()),
  queues: () => [...workers].flatMap((w) => w.metrics()),
  maintenances: () => [...maintenances].map((m) => m.snapshot()),
};

/**
 * Registers metrics that read their sources at scrape time: by default every exported source (the
 * API server's /metrics); a role's own metrics server passes that role's.
 */
export function registerProcessMetrics(registry: Registry, sources: ProcessMetricSources = EXPORTED): void {
  const gauge = (name: string, help: string, labelNames: string[], collect: (g: Gauge<string>) => void) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        collect(this);
      },
    });
  // The sources count from their start; the counter shows their current totals.
  const counter = (name: string, help: string, labelNames: string[], collect: (c: Counter<string>) => void) =>
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        collect(this);
      },
    });
  const {
    schedulers: schedulerSnapshots,
    queues: queueMetrics,
    maintenances: maintenanceSnapshots,
  } = sources;
  if (schedulerSnapshots !== undefined) {
    gauge('tidemark_scheduler_leader', "1 while this process's scheduler leads", [], (g) => {
      for (const s of schedulerSnapshots()) g.set(s.role === 'leader' ? 1 : 0);
    });
    gauge('tidemark_scheduler_epoch', "Lease epoch this process's scheduler leads under", [], (g) => {
      for (const s of schedulerSnapshots()) if (s.epoch !== null) g.set(s.epoch);
    });
    new SnapshotHistogram(
      registry,
      'tidemark_scheduler_tick_duration_seconds',
      'Scheduler tick duration',
      [],
      () => schedulerSnapshots().map((s) => ({ labels: {}, counts: s.tickSeconds })),
    );
    new SnapshotHistogram(
      registry,
      'tidemark_scheduler_occurrence_lag_seconds',
      'Materialised time minus fire time of each occurrence this process enqueued',
      [],
      () => schedulerSnapshots().map((s) => ({ labels: {}, counts: s.lagSeconds })),
    );
    counter(
      'tidemark_scheduler_occurrences_total',
      'Occurrence rows this process wrote (written), found already written (conflict) or dropped as stale',
      ['kind'],
      (c) => {
        for (const snap of schedulerSnapshots()) {
          c.inc({ kind: 'written' }, snap.occurrences);
          c.inc({ kind: 'conflict' }, snap.conflicts);
          c.inc({ kind: 'stale' }, snap.stale);
        }
      },
    );
  }
  if (queueMetrics !== undefined) {
    new SnapshotHistogram(
      registry,
      'tidemark_worker_claim_latency_seconds',
      'Claim statement latency, per queue',
      ['queue'],
      () => queueMetrics().map((q) => ({ labels: { queue: q.queue }, counts: q.claimLatencyMs.seconds })),
    );
    new SnapshotHistogram(
      registry,
      'tidemark_worker_start_lag_seconds',
      'Start time minus run-at time of each job this process started, per queue',
      ['queue'],
      () => queueMetrics().map((q) => ({ labels: { queue: q.queue }, counts: q.startLagMs.seconds })),
    );
    gauge('tidemark_worker_running', 'Jobs running in this process', ['queue'], (g) => {
      for (const q of queueMetrics()) g.inc({ queue: q.queue }, q.running);
    });
    counter('tidemark_job_outcomes_total', 'Attempt outcomes in this process', ['queue', 'outcome'], (c) => {
      for (const q of queueMetrics()) {
        for (const [outcome, n] of Object.entries(q.outcomes)) c.inc({ queue: q.queue, outcome }, n);
      }
    });
  }
  if (maintenanceSnapshots !== undefined) {
    new Counter({
      name: 'tidemark_retention_passes_total',
      help: 'Retention passes this process has completed while holding the maintenance lease',
      registers: [registry],
      collect() {
        this.reset();
        for (const m of maintenanceSnapshots()) this.inc(m.passes);
      },
    });
    gauge(
      'tidemark_maintenance_leader',
      "1 while this process's maintenance role holds its lease",
      [],
      (g) => {
        for (const m of maintenanceSnapshots()) g.set(m.role === 'leader' ? 1 : 0);
      },
    );
    gauge('tidemark_retention_last_pass_duration_seconds', 'Duration of the last retention pass', [], (g) => {
      for (const m of maintenanceSnapshots()) {
        const ms = m.lastPassMs;
        if (ms !== null) g.set(ms / 1000);
      }
    });
  }
}
