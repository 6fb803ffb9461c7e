/**
 * Just enough of the Prometheus text format (version 0.0.4) for the overview's live figures:
 * samples with labels, summed by a label.
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
