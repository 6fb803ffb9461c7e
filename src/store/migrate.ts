/**
 * Forward-only, numbered migrations: `migrations/NNNN_name.sql`, applied in order, each in its own
 * transaction, recorded with a SHA-256 of the file. An applied file that was edited afterwards, or a
 * database that is ahead of this build, stops start-up with an error naming the file: a schema that
 * silently differs from its source is worse than one that refuses to start.
 *
 * Several processes may start at once (every replica migrates at boot); a session advisory lock
 * serialises them so each migration is applied exactly once and late arrivals see it as done.
 */
import { TidemarkError } from '../errors.ts';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pool } from './pool.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
// Any constant works; it only has to be the same in every Tidemark process and unlikely elsewhere.
const MIGRATION_LOCK_KEY = 0x7469_6465; // 'tide'

export interface Migration {
  version: number;
  name: string;
  file: string;
  sql: string;
  checksum: string;
}

export interface MigrationResult {
  applied: Migration[];
  alreadyApplied: number;
}

/** A migration that cannot be applied or a schema that does not match this code's migrations. */
export class MigrationError extends TidemarkError {
  override name = 'MigrationError';
  readonly code = 'migration_failed';
}

export async function loadMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
    if (match === null) throw new MigrationError(`migration file ${file}: name must look like 0001_name.sql`);
    const sql = await readFile(join(dir, file), 'utf8');
    const version = Number(match[1]);
    const previous = migrations.at(-1);
    if (previous !== undefined && version !== previous.version + 1) {
      throw new MigrationError(
        `migration file ${file}: expected version ${previous.version + 1} after ${previous.file}`,
      );
    }
    migrations.push({ version, name: match[2] ?? '', file, sql, checksum: sha256(sql) });
  }
  return migrations;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * What every long-running role checks at start: the database's schema is exactly this build's.
 * Roles never migrate by themselves (that is `tidemark migrate`, one step an operator controls), so
 * an unmigrated or newer database stops them with one line saying which and what to run, rather
 * than with the first statement's `relation "jobs" does not exist`. Returns the schema version.
 */
export async function schemaCheck(pool: Pool, dir: string = MIGRATIONS_DIR): Promise<number> {
  const expected = (await loadMigrations(dir)).at(-1);
  const needed = expected === undefined ? 'none' : `${expected.version} (${expected.file})`;
  const { rows } = await pool.query<{ present: boolean }>(
    `SELECT to_regclass('tidemark_migrations') IS NOT NULL AS present`,
  );
  if (rows[0]?.present !== true) {
    throw new MigrationError(
      `the database has no Tidemark schema (this build needs version ${needed}): run 'tidemark migrate' first`,
    );
  }
  const latest = await pool.query<AppliedRow>(
    'SELECT version, file, checksum FROM tidemark_migrations ORDER BY version DESC LIMIT 1',
  );
  const applied = latest.rows[0];
  const version = applied?.version ?? 0;
  if (version > (expected?.version ?? 0)) {
    throw new MigrationError(
      `the database's schema is at version ${version} (${applied?.file ?? '?'}), newer than this build (${needed}): run the Tidemark version that migrated it, or newer`,
    );
  }
  if (version < (expected?.version ?? 0)) {
    throw new MigrationError(
      `the database's schema is at version ${version}, this build needs ${needed}: run 'tidemark migrate' first`,
    );
  }
  return version;
}

interface AppliedRow {
  version: number;
  file: string;
  checksum: string;
}

export async function migrate(pool: Pool, dir: string = MIGRATIONS_DIR): Promise<MigrationResult> {
  const migrations = await loadMigrations(dir);
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS tidemark_migrations (
        version    integer PRIMARY KEY,
        file       text NOT NULL,
        checksum   text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      const { rows } = await client.query<AppliedRow>(
        'SELECT version, file, checksum FROM tidemark_migrations ORDER BY version',
      );
      const known = new Map(migrations.map((m) => [m.version, m]));
      for (const row of rows) {
        const migration = known.get(row.version);
        if (migration === undefined) {
          throw new MigrationError(
            `migration ${row.file} is applied to this database but missing from this build; the database is newer than the code`,
          );
        }
        if (migration.checksum !== row.checksum) {
          throw new MigrationError(
            `migration ${migration.file} was edited after it was applied (checksum differs); write a new migration instead`,
          );
        }
      }
      const appliedVersions = new Set(rows.map((r) => r.version));
      const applied: Migration[] = [];
      for (const migration of migrations) {
        if (appliedVersions.has(migration.version)) continue;
        try {
          await client.query('BEGIN');
          await client.query(migration.sql);
          await client.query(
            'INSERT INTO tidemark_migrations (version, file, checksum) VALUES ($1, $2, $3)',
            [migration.version, migration.file, migration.checksum],
          );
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          const reason = error instanceof Error ? error.message : String(error);
          throw new MigrationError(`migration ${migration.file} failed: ${reason}`, { cause: error });
        }
        applied.push(migration);
      }
      return { applied, alreadyApplied: rows.length };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    }
  } finally {
    client.release();
  }
}
