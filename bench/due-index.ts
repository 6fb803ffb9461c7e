/**
 * The due-index structures side by side, in process: insert, pop everything due when 500 entries
 * are due, and cancel, at 30,000 and 1,000,000 entries; a full scan of an array is the baseline
 * (what the source document calls "what most people write first"). The database's sorted index is
 * measured at the same sizes with the scheduler's own range read (scheduleListDue).
 */
import { performance } from 'node:perf_hooks';
import { compareEntries, type DueEntry } from '../src/scheduler/due-index.ts';
import { HeapDueIndex } from '../src/scheduler/heap-index.ts';
import { WheelDueIndex } from '../src/scheduler/wheel-index.ts';
import { scheduleListDue } from '../src/store/schedules.ts';
import { benchDatabase } from './db.ts';
import { median, type Bench, type BenchRow } from './table.ts';

const START = 1_800_000_000_000;
const DUE = 500;
const ROUNDS = 21;
const HOUR = 3_600_000;

/** The naive baseline: every entry in an array, every pop a pass over all of them. */
class ScanIndex {
  #entries = new Map<string, DueEntry>();
  set(e: DueEntry): void {
    this.#entries.set(e.id, e);
  }
  delete(id: string): void {
    this.#entries.delete(id);
  }
  popDue(nowMs: number, limit: number): DueEntry[] {
    const due: DueEntry[] = [];
    for (const e of this.#entries.values()) if (e.dueMs <= nowMs) due.push(e);
    due.sort(compareEntries);
    const out = due.slice(0, limit);
    for (const e of out) this.#entries.delete(e.id);
    return out;
  }
}

interface Structure {
  set(e: DueEntry): void;
  delete(id: string): void;
  popDue(nowMs: number, limit: number): DueEntry[];
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function fmt(ms: number): string {
  return ms >= 1 ? `${ms.toFixed(2)} ms` : `${(ms * 1000).toFixed(0)} µs`;
}

function measure(name: string, make: () => Structure, n: number): BenchRow[] {
  const random = rng(n);
  // Everything is due between one hour and two hours out, except 500 per round placed just before it.
  const entries: DueEntry[] = Array.from({ length: n }, (_, i) => ({
    id: `s${i}`,
    dueMs: START + HOUR + Math.floor(random() * HOUR),
    version: 1,
  }));
  const index = make();
  const t0 = performance.now();
  for (const e of entries) index.set(e);
  const insertMs = performance.now() - t0;

  const pops: number[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    const now = START + r * 1000;
    for (let i = 0; i < DUE; i++) index.set({ id: `due${i}`, dueMs: now - 1 - (i % 900), version: r });
    const t = performance.now();
    const got = index.popDue(now, Number.MAX_SAFE_INTEGER);
    pops.push(performance.now() - t);
    if (got.length !== DUE) throw new Error(`${name}: popped ${got.length}, expected ${DUE}`);
  }

  const cancels = Math.min(10_000, n);
  const t1 = performance.now();
  for (let i = 0; i < cancels; i++) index.delete(`s${Math.floor(random() * n)}`);
  const cancelMs = performance.now() - t1;
  const label = n >= 1_000_000 ? '1M' : `${n / 1000}k`;
  return [
    {
      group: 'due index',
      name: `${name} ${label}: insert`,
      value: `${((insertMs * 1e6) / n).toFixed(0)} ns/entry`,
      note: `${fmt(insertMs)} for ${n.toLocaleString('en')}`,
    },
    {
      group: 'due index',
      name: `${name} ${label}: pop all due (500 due)`,
      value: `p50 ${fmt(median(pops))}`,
      target: name === 'heap' && n >= 1_000_000 ? '< 1 ms' : undefined,
      note: `max ${fmt(Math.max(...pops))}, ${ROUNDS} rounds`,
    },
    {
      group: 'due index',
      name: `${name} ${label}: cancel`,
      value: `${((cancelMs * 1e6) / cancels).toFixed(0)} ns/cancel`,
      note: name === 'scan' ? 'map delete' : 'live-map tombstone',
    },
  ];
}

async function measureDb(n: number): Promise<BenchRow[]> {
  const db = await benchDatabase();
  try {
    await db.pool.query(
      `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at)
       SELECT 'default', 'b' || g, 'every 1h', 'q', 'k',
              to_timestamp(($2::float8 + 3600000 + random() * 3600000) / 1000)
         FROM generate_series(1, $1) g`,
      [n, START],
    );
    await db.pool.query('VACUUM ANALYZE schedules');
    const pops: number[] = [];
    const client = await db.pool.connect();
    try {
      for (let r = 1; r <= ROUNDS; r++) {
        const now = new Date(START + r * 1000);
        await client.query(
          `UPDATE schedules SET next_fire_at = $1::timestamptz - interval '1 ms'
            WHERE id IN (SELECT id FROM schedules WHERE next_fire_at > $1 ORDER BY id LIMIT $2)`,
          [now, DUE],
        );
        const t = performance.now();
        const got = await scheduleListDue(client, now, DUE);
        pops.push(performance.now() - t);
        if (got.length !== DUE) throw new Error(`db: read ${got.length}, expected ${DUE}`);
        await client.query(
          `UPDATE schedules SET next_fire_at = next_fire_at + interval '2 hours' WHERE next_fire_at <= $1`,
          [now],
        );
      }
    } finally {
      client.release();
    }
    const label = n >= 1_000_000 ? '1M' : `${n / 1000}k`;
    return [
      {
        group: 'due index',
        name: `db (schedules_due_idx) ${label}: read 500 due`,
        value: `p50 ${fmt(median(pops))}`,
        note: 'one range read incl. round trip; advance happens in the materialising write',
      },
    ];
  } finally {
    await db.close();
  }
}

export const bench: Bench = async () => {
  const rows: BenchRow[] = [];
  for (const n of [30_000, 1_000_000]) {
    rows.push(...measure('scan', () => new ScanIndex(), n));
    rows.push(...measure('heap', () => new HeapDueIndex(), n));
    rows.push(...measure('wheel', () => new WheelDueIndex({ startMs: START }), n));
  }
  for (const n of [30_000, 1_000_000]) rows.push(...(await measureDb(n)));
  return rows;
};
