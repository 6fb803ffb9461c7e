/** The PostgreSQL a bench runs against: DATABASE_URL, or an embedded server started for the run. */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { databaseCreate, databaseDrop, databaseUrl } from '../src/store/databases.ts';
import { DEFAULT_EMBEDDED_PORT, startEmbedded } from '../src/store/embedded.ts';
import { migrate } from '../src/store/migrate.ts';
import { createPool, type Pool } from '../src/store/pool.ts';

export interface BenchDatabase {
  url: string;
  pool: Pool;
  close(): Promise<void>;
}

/** A fresh, migrated database for one bench; dropped (and the embedded server stopped) on close. */
export async function benchDatabase(): Promise<BenchDatabase> {
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
  const name = `tmb_${randomBytes(4).toString('hex')}`;
  await databaseCreate(adminUrl, name);
  const url = databaseUrl(adminUrl, name);
  const pool = createPool({ connectionString: url, max: 10, applicationName: 'tidemark-bench' });
  await migrate(pool);
  const admin = adminUrl;
  return {
    url,
    pool,
    async close() {
      await pool.end();
      await databaseDrop(admin, name);
      await stopServer();
    },
  };
}
