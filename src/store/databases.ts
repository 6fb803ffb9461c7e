/** Whole-database operations, for the test harness and tooling: create from a template, drop. */
import pg from 'pg';

async function withAdminClient<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function databaseCreate(adminUrl: string, name: string, template?: string): Promise<void> {
  await withAdminClient(adminUrl, async (client) => {
    const from = template === undefined ? '' : ` TEMPLATE ${client.escapeIdentifier(template)}`;
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}${from}`);
  });
}

/** Drops the database, disconnecting anyone still on it (a killed child process may have left sessions). */
export async function databaseDrop(adminUrl: string, name: string): Promise<void> {
  await withAdminClient(adminUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
  });
}

export async function databaseListByPrefix(adminUrl: string, prefix: string): Promise<string[]> {
  return withAdminClient(adminUrl, async (client) => {
    const { rows } = await client.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname`,
      [prefix],
    );
    return rows.map((r) => r.datname);
  });
}

/** Replaces the database name in a connection URL. */
export function databaseUrl(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}
