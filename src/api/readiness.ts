/**
 * Readiness as /readyz answers it, on the API's port and on a role's metrics port alike: the database
 * answers within 2 s and its schema is at least this build's.
 */
import { loadMigrations } from '../store/migrate.ts';
import type { Pool } from '../store/pool.ts';
import { migrationVersionApplied } from '../store/stats.ts';

const READY_TIMEOUT_MS = 2000;

export type Readiness = { ready: true; schemaVersion: number } | { ready: false; reason: string };

/** A check to call per request; the build's schema version is read once. */
export function readinessCheck(pool: Pool): () => Promise<Readiness> {
  const expectedVersion = loadMigrations().then((m) => m.at(-1)?.version ?? 0);
  // Not awaited until the first check; a failure then answers not ready rather than crashing start-up.
  expectedVersion.catch(() => undefined);
  return async () => {
    try {
      const version = await withTimeout(migrationVersionApplied(pool), READY_TIMEOUT_MS);
      const expected = await expectedVersion;
      if (version < expected) {
        return { ready: false, reason: `schema at version ${version}, this build needs ${expected}` };
      }
      return { ready: true, schemaVersion: version };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return { ready: false, reason: `database: ${reason}` };
    }
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
