/**
 * Each test file's own database, cloned from the run's migrated template (see scripts/test.ts) and
 * dropped when the file's tests end.
 */
import { after } from 'node:test';
import { randomBytes } from 'node:crypto';
import { databaseCreate, databaseDrop, databaseUrl } from '../../src/store/databases.ts';
import { createPool, type Pool } from '../../src/store/pool.ts';

export interface TestDatabase {
  name: string;
  url: string;
  pool: Pool;
}

function harnessEnv(): { adminUrl: string; template: string; run: string } {
  const adminUrl = process.env.TIDEMARK_TEST_ADMIN_URL;
  const template = process.env.TIDEMARK_TEST_TEMPLATE;
  const run = process.env.TIDEMARK_TEST_RUN;
  if (adminUrl === undefined || template === undefined || run === undefined) {
    throw new Error('test databases come from the test runner: run tests with `npm test [files…]`');
  }
  return { adminUrl, template, run };
}

async function create(migrated: boolean): Promise<TestDatabase> {
  const { adminUrl, template, run } = harnessEnv();
  const name = `${run}_${randomBytes(4).toString('hex')}`;
  await databaseCreate(adminUrl, name, migrated ? template : undefined);
  const url = databaseUrl(adminUrl, name);
  const pool = createPool({ connectionString: url, max: 5, applicationName: 'tidemark-test' });
  after(async () => {
    await pool.end();
    await databaseDrop(adminUrl, name);
  });
  return { name, url, pool };
}

/** A fresh database with every migration applied. */
export function createTestDatabase(): Promise<TestDatabase> {
  return create(true);
}

/** A fresh database with nothing in it, for testing migrations themselves. */
export function createEmptyDatabase(): Promise<TestDatabase> {
  return create(false);
}
