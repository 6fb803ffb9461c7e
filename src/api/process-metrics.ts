/**
 * Metrics the scheduler and workers keep in their own process (tick duration, occurrence lag, claim
 * latency, outcomes), exported on /metrics of an API server in the same process. A process that runs
 * them beside the API (`tidemark dev`, or an application embedding both) hands them over with
 * `exportSchedulerMetrics` / `exportWorkerMetrics`; each returns a function that withdraws them.
 *
 * Their latencies are kept as rings of recent samples, so they are exported as quantiles (p50, p99,
 * max over the window), not as Prometheus histograms.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
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

type Quantiles = { p50: number | null; p99: number | null; max: number | null };

function setQuantiles(g: Gauge<string>, labels: Record<string, string>, q: Quantiles): void {
  for (const [quantile, value] of [
    ['0.5', q.p50],
    ['0.99', q.p99],
    ['1', q.max],
  ] as const) {
    if (value !== null) g.set({ ...labels, quantile }, value / 1000);
  }
}

/** Registers gauges that read every exported source at scrape time. */
export function registerProcessMetrics(registry: Registry): void {
  const gauge = (
    name: string,
    help: string,
    labelNames: string[],
    collect: (g: Gauge<string>) => void,
  ): void => {
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
  };
  gauge('tidemark_scheduler_leader', "1 while this process's scheduler leads", [], (g) => {
    for (const s of schedulers) g.set(s.snapshot().role === 'leader' ? 1 : 0);
  });
  gauge('tidemark_scheduler_epoch', "Lease epoch this process's scheduler leads under", [], (g) => {
    for (const s of schedulers) {
      const { epoch } = s.snapshot();
      if (epoch !== null) g.set(epoch);
    }
  });
  gauge(
    'tidemark_scheduler_tick_duration_seconds',
    'Scheduler tick duration over recent ticks',
    ['quantile'],
    (g) => {
      for (const s of schedulers) setQuantiles(g, {}, s.snapshot().tickMs);
    },
  );
  gauge(
    'tidemark_scheduler_occurrence_lag_seconds',
    'Materialised time minus fire time, recent occurrences',
    ['quantile'],
    (g) => {
      for (const s of schedulers) setQuantiles(g, {}, s.snapshot().lagMs);
    },
  );
  gauge(
    'tidemark_scheduler_occurrences',
    'Occurrence rows this process has written (counter)',
    ['kind'],
    (g) => {
      for (const s of schedulers) {
        const snap = s.snapshot();
        g.set({ kind: 'written' }, snap.occurrences);
        g.set({ kind: 'conflict' }, snap.conflicts);
        g.set({ kind: 'stale' }, snap.stale);
      }
    },
  );
  gauge(
    'tidemark_worker_claim_latency_seconds',
    'Claim statement latency, recent claims',
    ['queue', 'quantile'],
    (g) => {
      for (const w of workers)
        for (const q of w.metrics()) setQuantiles(g, { queue: q.queue }, q.claimLatencyMs);
    },
  );
  gauge(
    'tidemark_worker_start_lag_seconds',
    'Start time minus run-at time, recent jobs',
    ['queue', 'quantile'],
    (g) => {
      for (const w of workers) for (const q of w.metrics()) setQuantiles(g, { queue: q.queue }, q.startLagMs);
    },
  );
  gauge('tidemark_worker_running', 'Jobs running in this process', ['queue'], (g) => {
    for (const w of workers) for (const q of w.metrics()) g.inc({ queue: q.queue }, q.running);
  });
  gauge('tidemark_job_outcomes', 'Attempt outcomes in this process (counter)', ['queue', 'outcome'], (g) => {
    for (const w of workers) {
      for (const q of w.metrics()) {
        for (const [outcome, n] of Object.entries(q.outcomes)) g.inc({ queue: q.queue, outcome }, n);
      }
    }
  });
  new Counter({
    name: 'tidemark_retention_passes_total',
    help: 'Retention passes this process has completed while holding the maintenance lease',
    registers: [registry],
    collect() {
      this.reset();
      for (const m of maintenances) this.inc(m.snapshot().passes);
    },
  });
  gauge('tidemark_maintenance_leader', "1 while this process's maintenance role holds its lease", [], (g) => {
    for (const m of maintenances) g.set(m.snapshot().role === 'leader' ? 1 : 0);
  });
  gauge('tidemark_retention_last_pass_duration_seconds', 'Duration of the last retention pass', [], (g) => {
    for (const m of maintenances) {
      const ms = m.snapshot().lastPassMs;
      if (ms !== null) g.set(ms / 1000);
    }
  });
}
