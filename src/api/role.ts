/**
 * The API as a long-running role of `tidemark api` and `tidemark dev`: listens, and on first start of
 * a dev database mints an admin token so the quick start can be followed without a setup step.
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import type { Pool } from '../store/pool.ts';
import { tokenCountActiveAdmins, tokenFindActiveByHash } from '../store/tokens.ts';
import { dashboardWarm } from '../dashboard/serve.ts';
import { createApiServer } from './server.ts';
import { tokenHash, tokenMint } from './tokens.ts';

export interface ApiRole {
  name: 'api';
  url: string;
  stop(): Promise<void>;
}

export async function startApiRole(options: {
  pool: Pool;
  port: number;
  host?: string;
  clock?: Clock;
  logger?: Logger;
  /** When the port is taken, listen on a free one instead of failing (for `dev`). */
  fallbackToFreePort?: boolean;
  /** `servers` in /openapi.json; default: the URL each request reached. */
  publicUrl?: string;
}): Promise<ApiRole> {
  const server = await createApiServer({
    pool: options.pool,
    clock: options.clock,
    logger: options.logger,
    publicUrl: options.publicUrl,
  });
  let url: string;
  try {
    url = await server.listen({ port: options.port, host: options.host });
  } catch (error) {
    const taken = error instanceof Error && 'code' in error && error.code === 'EADDRINUSE';
    if (!(taken && options.fallbackToFreePort === true)) {
      await server.close();
      throw error;
    }
    url = await server.listen({ port: 0, host: options.host });
  }
  return { name: 'api', url, stop: () => server.close() };
}

/**
 * The dev admin token: kept in `<dataDir>/admin-token` (mode 0600) so every `tidemark dev` start can
 * print it again. Minted when the database has no admin token at all; undefined when admins exist
 * but this folder does not hold a valid one (someone else's database: ask its owner).
 */
export async function devAdminToken(
  pool: Pool,
  dataDir: string,
): Promise<{ token: string; created: boolean } | undefined> {
  const file = join(dataDir, 'admin-token');
  const saved = await readFile(file, 'utf8').then(
    (t) => t.trim(),
    () => undefined,
  );
  if (saved !== undefined && (await tokenFindActiveByHash(pool, tokenHash(saved))) !== undefined) {
    return { token: saved, created: false };
  }
  if ((await tokenCountActiveAdmins(pool)) > 0) return undefined;
  const { token } = await tokenMint(pool, { tenantId: null, name: 'dev admin' });
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return { token, created: true };
}

/** Starts the API for `tidemark dev`; prints the API's URL and admin token. */
export async function startDevApi(options: {
  pool: Pool;
  dataDir: string;
  logger: Logger;
}): Promise<ApiRole> {
  const port = Number(process.env.TIDEMARK_API_PORT ?? DEV_API_PORT);
  const api = await startApiRole({
    pool: options.pool,
    port,
    logger: options.logger,
    fallbackToFreePort: true,
  });
  // Load the dashboard now, in the background, so the first page load does not wait for it.
  dashboardWarm().then(
    (ms) => options.logger.info({ ms: Math.round(ms) }, 'dashboard assets loaded'),
    (error: unknown) =>
      options.logger.error({ err: error }, 'dashboard assets failed to load; retried on first load'),
  );
  const admin = await devAdminToken(options.pool, options.dataDir);
  const tokenLine =
    admin === undefined
      ? '# this database already has admin tokens, none saved in the data folder: ask their owner\n'
      : `TIDEMARK_TOKEN=${admin.token}${admin.created ? '   (new admin token, saved in the data folder)' : ''}\n`;
  process.stdout.write(`TIDEMARK_URL=${api.url}\n${tokenLine}`);
  return api;
}

export const DEV_API_PORT = 8787;
