/**
 * Just enough of the Prometheus text format (version 0.0.4) for the overview: samples with labels,
 * and quantiles from histogram buckets as PromQL's histogram_quantile computes them (linear
 * interpolation inside the bucket that holds the rank).
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) {
      labels[l[1] ?? ''] = (l[2] ?? '').replace(/\\n/g, '\n').replace(/\\(.)/g, '$1');
    }
    const raw = m[3] ?? '';
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    samples.push({ name: m[1] ?? '', labels, value });
  }
  return samples;
}

export function samplesNamed(samples: Sample[], name: string): Sample[] {
  return samples.filter((s) => s.name === name);
}

/** Sum of a metric's samples, grouped by one label. */
export function sumBy(samples: Sample[], name: string, label: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samplesNamed(samples, name)) {
    const key = s.labels[label] ?? '';
    out.set(key, (out.get(key) ?? 0) + s.value);
  }
  return out;
}

/** Cumulative bucket counts by upper bound, summed over every other label. */
export type Buckets = Map<number, number>;

export function histogramBuckets(samples: Sample[], name: string): Buckets | null {
  const rows = samplesNamed(samples, `${name}_bucket`);
  if (rows.length === 0) return null;
  const out: Buckets = new Map();
  for (const s of rows) {
    const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
    out.set(le, (out.get(le) ?? 0) + s.value);
  }
  return out;
}

/** Bucket counts observed between two scrapes (a counter reset counts from zero). */
export function bucketsDelta(now: Buckets, before: Buckets | null): Buckets {
  const out: Buckets = new Map();
  const reset = before !== null && [...now].some(([le, n]) => n < (before.get(le) ?? 0));
  for (const [le, n] of now) out.set(le, before === null || reset ? n : n - (before.get(le) ?? 0));
  return out;
}

/** The q-quantile (0..1) of cumulative buckets; null when they hold no observation. */
export function quantile(q: number, buckets: Buckets): number | null {
  const sorted = [...buckets].sort((a, b) => a[0] - b[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  let prevBound = 0;
  let prevCount = 0;
  for (const [bound, count] of sorted) {
    if (count >= rank) {
      // Like histogram_quantile: the +Inf bucket answers with the highest finite bound.
      if (bound === Infinity) return prevBound;
      if (count === prevCount) return bound;
      return prevBound + ((bound - prevBound) * (rank - prevCount)) / (count - prevCount);
    }
    prevBound = bound;
    prevCount = count;
  }
  return prevBound;
}

/** The q-quantile of raw values (nearest rank). */
export function quantileOf(q: number, values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] ?? null;
}
