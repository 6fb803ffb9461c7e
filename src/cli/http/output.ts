/** Human output: aligned tables and key/value blocks; `--json` prints the API's JSON instead. */

export type Cell = string | number | boolean | null | undefined;

export function table(columns: string[], rows: Cell[][]): string {
  const text = rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))));
  const widths = columns.map((c, i) => Math.max(c.length, ...text.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...text.map(line)].join('\n') + '\n';
}

export function block(entries: [string, Cell | object][]): string {
  const width = Math.max(...entries.map(([k]) => k.length));
  return (
    entries
      .map(
        ([k, v]) =>
          `${k.padEnd(width)}  ${v !== null && typeof v === 'object' ? JSON.stringify(v) : v === null || v === undefined ? '-' : String(v)}`,
      )
      .join('\n') + '\n'
  );
}

export function print(json: boolean | undefined, data: unknown, human: () => string): void {
  process.stdout.write(json === true ? `${JSON.stringify(data, null, 2)}\n` : human());
}
