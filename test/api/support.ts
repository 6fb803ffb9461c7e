/**
 * A real API server on a free port against this test file's own database, with an admin token and
 * one tenant token each for tenants `acme` and `globex`, and a small fetch helper.
 */
import { after } from 'node:test';
import { pino } from 'pino';
import { createApiServer, type ApiServerOptions } from '../../src/api/server.ts';
import { tokenMint } from '../../src/api/tokens.ts';
import { tenantUpsert } from '../../src/store/tenants.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

export interface Reply<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface TestApi {
  db: TestDatabase;
  url: string;
  tokens: { admin: string; acme: string; globex: string };
  call<T = Record<string, unknown>>(
    method: string,
    path: string,
    options?: { token?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<Reply<T>>;
}

export async function startTestApi(options: Partial<Omit<ApiServerOptions, 'pool'>> = {}): Promise<TestApi> {
  const db = await createTestDatabase();
  const server = await createApiServer({
    pool: db.pool,
    logger: pino({ level: process.env.TIDEMARK_LOG_LEVEL ?? 'silent' }),
    ...options,
  });
  const url = await server.listen({ port: 0 });
  after(() => server.close());
  await tenantUpsert(db.pool, { id: 'acme', name: 'Acme', maxRunning: null });
  await tenantUpsert(db.pool, { id: 'globex', name: 'Globex', maxRunning: null });
  const tokens = {
    admin: (await tokenMint(db.pool, { tenantId: null, name: 'test admin', ratePerS: 100_000 })).token,
    acme: (await tokenMint(db.pool, { tenantId: 'acme', name: 'acme', ratePerS: 100_000 })).token,
    globex: (await tokenMint(db.pool, { tenantId: 'globex', name: 'globex', ratePerS: 100_000 })).token,
  };
  const call: TestApi['call'] = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    const token = opts.token === undefined ? tokens.admin : opts.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    } else if (body !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(`${url}${path}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = {};
    try {
      parsed = text === '' ? {} : JSON.parse(text);
    } catch {
      parsed = { text };
    }
    return { status: response.status, headers: response.headers, body: parsed as never, text };
  };
  return { db, url, tokens, call };
}

const snapshotStatements = new WeakMap<TestDatabase, string>();

/**
 * A digest of every table's rows, to assert that a rejected request changed nothing: one statement,
 * made once per database (the fuzz test takes two per request).
 */
export async function databaseSnapshot(db: TestDatabase): Promise<string> {
  let sql = snapshotStatements.get(db);
  if (sql === undefined) {
    const { rows } = await db.pool.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables
        WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
    );
    const digests = rows.map(
      ({ table_name }) =>
        `'${table_name}:' || coalesce((SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM "${table_name}" t), 'empty')`,
    );
    sql = `SELECT concat_ws(E'\\n', ${digests.join(', ')}) AS digest`;
    snapshotStatements.set(db, sql);
  }
  const result = await db.pool.query<{ digest: string }>(sql);
  return result.rows[0]?.digest ?? '';
}
