/** Partition changes the maintenance role makes: attach, detach and drop, fenced by its lease. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Fence } from './occurrences.ts';
import type { Pool, PoolClient, Queryable } from './pool.ts';
import { FENCE } from './retention.ts';

/**
 * Runs a change of a partitioned table's partitions (jobs_done's, occurrences') in a transaction
 * fenced by the maintenance lease, waiting at most `lockTimeoutMs` for each lock: `fenced` when the fence no longer holds (nothing changed),
 * `busy` when a lock was not granted in time (55P03) or the change met a row it must leave (23514).
 */
export async function partitionChangeFenced<T>(
  pool: Pool,
  fence: Fence,
  lockTimeoutMs: number,
  change: (client: PoolClient) => Promise<T>,
): Promise<T | 'fenced' | 'busy'> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`);
    const held = await client.query(`WITH ${FENCE} SELECT FROM fence`, [
      fence.lease,
      fence.holder,
      fence.epoch,
    ]);
    if (held.rowCount !== 1) {
      await client.query('ROLLBACK');
      return 'fenced';
    }
    const result = await change(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    const code = (error as { code?: unknown }).code;
    if (code === '55P03' || code === '23514') return 'busy';
    throw error;
  } finally {
    client.release();
  }
}

/** Tries at the locks a detach takes before the change reports `busy` and waits for the next pass. */
const DETACH_TRIES = 5;

/**
 * In the caller's transaction, before it detaches `partitions` from `parent`: takes them and
 * `parent`'s default partition (a detach changes its bounds), then `parent` alone, ACCESS
 * EXCLUSIVE, in up to DETACH_TRIES tries of at most `tryMs` each; a savepoint lets go of what a
 * failed try took. The parent comes last and alone (ONLY): while its lock waits, every write to the
 * table queues behind it, so it must wait only for statements already running there, never for
 * another partition's lock (LOCK without ONLY takes every partition, and autovacuum holds the one it
 * vacuums for seconds). Throws 55P03 once the tries are spent.
 */
export async function partitionsLockForDetach(
  client: PoolClient,
  parent: string,
  partitions: readonly string[],
  tryMs: number,
): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partdefid
      WHERE p.partrelid = $1::regclass`,
    [parent],
  );
  const names = [...partitions, ...rows.map((r) => r.name)].map((n) => `ONLY "${n}"`);
  for (let attempt = 1; ; attempt++) {
    await client.query('SAVEPOINT detach_locks');
    try {
      await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(tryMs))}`);
      await client.query(`LOCK TABLE ${names.join(', ')} IN ACCESS EXCLUSIVE MODE`);
      await client.query(`LOCK TABLE ONLY ${parent} IN ACCESS EXCLUSIVE MODE`);
      await client.query('RELEASE SAVEPOINT detach_locks');
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== '55P03' || attempt >= DETACH_TRIES) throw error;
      await client.query('ROLLBACK TO SAVEPOINT detach_locks');
      await sleep(50 * attempt);
    }
  }
}

/**
 * In the caller's transaction: detaches partition `name` from `parent` and notes it for
 * partitionsDetachedDrop, which drops it once the caller has committed and let go of `parent`.
 */
export async function partitionDetach(db: Queryable, parent: string, name: string): Promise<void> {
  await db.query(`ALTER TABLE ${parent} DETACH PARTITION "${name}"`);
  await db.query('INSERT INTO partitions_detached (name) VALUES ($1) ON CONFLICT DO NOTHING', [name]);
}

/**
 * Drops the partitions detached so far (partitionDetach), each in a transaction of its own that
 * holds no partitioned table: removing a slice's files at its commit takes ~100 ms for a million
 * jobs. Returns their names.
 */
export async function partitionsDetachedDrop(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>('SELECT name FROM partitions_detached ORDER BY name');
  for (const { name } of rows) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      // A role that lost its lease may drop the same one: the second finds it gone.
      await client.query(`DROP TABLE IF EXISTS "${name}"`);
      await client.query('DELETE FROM partitions_detached WHERE name = $1', [name]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }
  return rows.map((r) => r.name);
}
