/** One printed row of `npm run bench`. Values are preformatted so each bench chooses its own units. */
export interface BenchRow {
  group: string;
  name: string;
  value: string;
  /** Target from the issue, or a reference the value should be read against. */
  target?: string;
  note?: string;
}

export type Bench = () => Promise<BenchRow[]>;

export function printTable(rows: BenchRow[]): void {
  const header: BenchRow = {
    group: 'group',
    name: 'measurement',
    value: 'value',
    target: 'target',
    note: 'note',
  };
  const all = [header, ...rows];
  const cols = ['group', 'name', 'value', 'target', 'note'] as const;
  const widths = cols.map((c) => Math.max(...all.map((r) => (r[c] ?? '').length)));
  const line = (r: BenchRow): string =>
    cols
      .map((c, i) => (r[c] ?? '').padEnd(widths[i] ?? 0))
      .join(' | ')
      .trimEnd();
  process.stdout.write(`${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('-|-')}\n`);
  for (const r of rows) process.stdout.write(`${line(r)}\n`);
}

/** Median of a sample; benchmarks quote medians because this machine is shared and noisy. */
export function median(values: number[]): number {
  return percentile(values, 50);
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}
