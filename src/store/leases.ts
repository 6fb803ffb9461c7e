/**
 * The leader lease. Every comparison with time uses the database's clock (`clock_timestamp()`, not
 * the transaction-start `now()`), so no scheduler host's clock can make a lease look valid. The epoch
 * rises by one on every change of holder; writes a leader makes are conditioned on it.
 */
import type { Queryable } from './pool.ts';

export interface LeaseTerm {
  holder: string;
  epoch: number;
  expiresAt: Date;
  /** The database's clock when the statement ran: the scheduler's time base between renewals. */
  dbNow: Date;
}

interface TermRow {
  holder: string;
  epoch: number;
  expires_at: Date;
  db_now: Date;
}

function term(row: TermRow | undefined): LeaseTerm | null {
  if (row === undefined) return null;
  return { holder: row.holder, epoch: row.epoch, expiresAt: row.expires_at, dbNow: row.db_now };
}

/**
 * Takes the lease when it is free (released) or expired, always with a new epoch; an unexpired term
 * is never taken over, not even by a process with the same holder name (a restarted replica's
 * previous incarnation may still have writes in flight). Returns the new term, or null.
 */
export async function leaseAcquire(
  db: Queryable,
  name: string,
  holder: string,
  ttlMs: number,
): Promise<LeaseTerm | null> {
  const { rows } = await db.query<TermRow>({
    name: 'leaseAcquire',
    text: `INSERT INTO leases AS l (name, holder, epoch, expires_at, renewed_at, acquired_at)
           VALUES ($1, $2, 1, clock_timestamp() + $3 * interval '1 millisecond', clock_timestamp(), clock_timestamp())
           ON CONFLICT (name) DO UPDATE
             SET holder = EXCLUDED.holder, epoch = l.epoch + 1, expires_at = EXCLUDED.expires_at,
                 renewed_at = EXCLUDED.renewed_at, acquired_at = EXCLUDED.acquired_at
             WHERE l.holder IS NULL OR l.expires_at IS NULL OR l.expires_at <= clock_timestamp()
           RETURNING holder, epoch, expires_at, clock_timestamp() AS db_now`,
    values: [name, holder, ttlMs],
  });
  return term(rows[0]);
}

/** Extends exactly the term we hold; null when it is gone (expired, taken, or released). */
export async function leaseRenew(
  db: Queryable,
  name: string,
  holder: string,
  epoch: number,
  ttlMs: number,
): Promise<LeaseTerm | null> {
  const { rows } = await db.query<TermRow>({
    name: 'leaseRenew',
    text: `UPDATE leases
              SET expires_at = clock_timestamp() + $4 * interval '1 millisecond', renewed_at = clock_timestamp()
            WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_at > clock_timestamp()
           RETURNING holder, epoch, expires_at, clock_timestamp() AS db_now`,
    values: [name, holder, epoch, ttlMs],
  });
  return term(rows[0]);
}

/**
 * Gives up exactly the term we hold and tells standbys on `tidemark_lease` so they take over now
 * rather than after the TTL. Returns whether we still held it.
 */
export async function leaseRelease(
  db: Queryable,
  name: string,
  holder: string,
  epoch: number,
): Promise<boolean> {
  const { rows } = await db.query<{ released: boolean }>({
    name: 'leaseRelease',
    text: `WITH released AS (
             UPDATE leases SET holder = NULL, expires_at = NULL
              WHERE name = $1 AND holder = $2 AND epoch = $3
             RETURNING name
           ), notified AS (
             SELECT pg_notify('tidemark_lease', name) FROM released
           )
           SELECT EXISTS (SELECT 1 FROM released) AS released, (SELECT count(*) FROM notified) AS notified`,
    values: [name, holder, epoch],
  });
  return rows[0]?.released === true;
}

export interface LeaseRow {
  name: string;
  holder: string | null;
  epoch: number;
  expiresAt: Date | null;
  acquiredAt: Date | null;
}

export async function leaseGet(db: Queryable, name: string): Promise<LeaseRow | null> {
  const { rows } = await db.query<{
    name: string;
    holder: string | null;
    epoch: number;
    expires_at: Date | null;
    acquired_at: Date | null;
  }>({
    name: 'leaseGet',
    text: 'SELECT name, holder, epoch, expires_at, acquired_at FROM leases WHERE name = $1',
    values: [name],
  });
  const row = rows[0];
  if (row === undefined) return null;
  return {
    name: row.name,
    holder: row.holder,
    epoch: row.epoch,
    expiresAt: row.expires_at,
    acquiredAt: row.acquired_at,
  };
}

/**
 * The database's clock: a standby's time base while it holds no lease, and the instant a schedule's
 * first fire time counts from when it is created, edited, resumed or triggered.
 */
export async function dbClockNow(db: Queryable): Promise<Date> {
  const { rows } = await db.query<{ now: Date }>({
    name: 'dbClockNow',
    text: 'SELECT clock_timestamp() AS now',
  });
  const row = rows[0];
  if (row === undefined) throw new Error('SELECT clock_timestamp() returned no row');
  return row.now;
}
