/** The PostgreSQL a bench runs against: DATABASE_URL, or an embedded server started for the run. */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { databaseCreate, databaseDrop, databaseListByPrefix, databaseUrl } from '../src/store/databases.ts';
import { DEFAULT_EMBEDDED_PORT, startEmbedded } from '../src/store/embedded.ts';
import { migrate } from '../src/store/migrate.ts';
import { createPool, type Pool } from '../src/store/pool.ts';

export interface BenchDatabase {
  url: string;
  pool: Pool;
  /** The database's name. */
  name: string;
  /** False when a kept database from an earlier run was opened again (migrated to the current schema). */
  created: boolean;
  close(): Promise<void>;
}

export interface BenchDatabaseOptions {
  /**
   * Keep the database after close under this name (after BENCH_DB_PREFIX), and open it again when
   * it exists: a bench whose setup takes long (the history bench's load) can then be rerun on it.
   * Only with DATABASE_URL; whoever keeps one drops it.
   */
  keep?: string;
}

/**
 * Databases are named `<BENCH_DB_PREFIX>_<random>` (prefix default `tmb`), so benches run side by
 * side on one server never meet, and a run's leftovers are found by the prefix.
 */
export const BENCH_DB_PREFIX = process.env.BENCH_DB_PREFIX ?? 'tmb';

/** A fresh, migrated database for one bench; dropped (and the embedded server stopped) on close. */
export async function benchDatabase(options: BenchDatabaseOptions = {}): Promise<BenchDatabase> {
  let adminUrl = process.env.DATABASE_URL;
  let stopServer = (): Promise<void> => Promise.resolve();
  if (adminUrl === undefined || adminUrl === '') {
    const dir = await mkdtemp(join(tmpdir(), 'tidemark-bench-'));
    await chmod(dir, 0o755);
    // Durable settings, as production runs: benchmark numbers with fsync off would flatter us.
    const server = await startEmbedded({ dataDir: dir, port: DEFAULT_EMBEDDED_PORT + 2 });
    adminUrl = server.adminUrl;
    stopServer = async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    };
  }
  const keep = options.keep !== undefined && process.env.DATABASE_URL !== undefined;
  const name = `${BENCH_DB_PREFIX}_${keep ? options.keep : randomBytes(4).toString('hex')}`;
  const created = !(keep && (await databaseListByPrefix(adminUrl, name)).includes(name));
  if (created) await databaseCreate(adminUrl, name);
  const url = databaseUrl(adminUrl, name);
  const pool = createPool({ connectionString: url, max: 10, applicationName: 'tidemark-bench' });
  await migrate(pool);
  const admin = adminUrl;
  return {
    url,
    pool,
    name,
    created,
    async close() {
      await pool.end();
      if (!keep) await databaseDrop(admin, name);
      await stopServer();
    },
  };
}
