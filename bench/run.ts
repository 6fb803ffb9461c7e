/**
 * `npm run bench`: runs every bench module (or those named on the command line) and prints one table.
 * Benches that need PostgreSQL use DATABASE_URL, or start the embedded server when it is unset.
 */
import { printTable, type Bench, type BenchRow } from './table.ts';

const benches: Record<string, () => Promise<Bench>> = {
  store: async () => (await import('./store.ts')).bench,
  api: async () => (await import('./api.ts')).bench,
  'due-index': async () => (await import('./due-index.ts')).bench,
  scheduler: async () => (await import('./scheduler.ts')).bench,
  worker: async () => (await import('./worker.ts')).bench,
  workflow: async () => (await import('./workflow.ts')).bench,
  schedule: async () => (await import('./schedule.ts')).bench,
  history: async () => (await import('./history.ts')).bench,
  charts: async () => (await import('./charts.ts')).bench,
  partitions: async () => (await import('./partitions.ts')).bench,
};

const wanted = process.argv.slice(2);
const rows: BenchRow[] = [];
for (const [name, load] of Object.entries(benches)) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  process.stderr.write(`bench: ${name}…\n`);
  rows.push(...(await (await load())()));
}
printTable(rows);
