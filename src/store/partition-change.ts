/** Partition changes the maintenance role makes: attach, detach and drop, fenced by its lease. */
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
