/**
 * The maintenance role as the scheduler and dev commands start it: retention settings from a JSON
 * file (`--retention FILE`, see docs/production.md), checked before anything starts.
 */
import { readFile } from 'node:fs/promises';
import type { Logger } from '../log.ts';
import { Maintenance } from '../maintenance/maintenance.ts';
import { RetentionConfigError, type RetentionConfig } from '../maintenance/retention-config.ts';
import type { Pool } from '../store/pool.ts';
import { UsageError } from './usage-error.ts';

async function readRetention(file: string | undefined): Promise<RetentionConfig> {
  if (file === undefined) return {};
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--retention: cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  try {
    return JSON.parse(text) as RetentionConfig;
  } catch (error) {
    throw new UsageError(`--retention: ${file} is not JSON: ${(error as Error).message}`, { cause: error });
  }
}

/** A Maintenance for these settings (not started); a bad file or setting is a UsageError naming it. */
export async function createMaintenance(
  pool: Pool,
  log: Logger,
  file: string | undefined,
): Promise<Maintenance> {
  const retention = await readRetention(file);
  try {
    return new Maintenance({ pool, log, retention });
  } catch (error) {
    if (error instanceof RetentionConfigError) {
      throw new UsageError(`--retention ${file ?? ''}: ${error.message}`, { cause: error });
    }
    throw error;
  }
}
