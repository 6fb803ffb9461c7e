/** `migrate()`: the library call behind `tidemark migrate`, for programs that deploy the schema themselves. */
import { migrate as migratePool, type Migration } from './store/migrate.ts';
import { createPool } from './store/pool.ts';

export interface MigrateResult {
  /** File names of the migrations this call applied, in order. */
  applied: string[];
  /** How many were applied before this call. */
  alreadyApplied: number;
}

/**
 * Applies the pending migrations to the database at `connectionString`, each once, in order; safe to
 * call from many processes at once (they take turns under an advisory lock). Refuses a database whose
 * applied migrations differ from this version's files, or that is ahead of it.
 */
export async function migrate(options: { connectionString: string }): Promise<MigrateResult> {
  const pool = createPool({
    connectionString: options.connectionString,
    max: 1,
    applicationName: 'tidemark-migrate',
  });
  try {
    const result = await migratePool(pool);
    return { applied: result.applied.map((m: Migration) => m.file), alreadyApplied: result.alreadyApplied };
  } finally {
    await pool.end();
  }
}
