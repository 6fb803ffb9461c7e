/**
 * A deployment without `tidemark dev`: `tidemark migrate` and `tidemark api` on a database, then the
 * first admin token and the tenants made with the CLI on DATABASE_URL alone (no API, no token), and
 * the token working against the API. Refusals name the flag and change nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestDatabase } from '../support/db.ts';
import { spawnTidemark } from '../support/processes.ts';

const db = await createTestDatabase();

async function cli(args: string[], env: Record<string, string | undefined> = {}) {
  const p = spawnTidemark(args, {
    env: { DATABASE_URL: db.url, TIDEMARK_URL: undefined, TIDEMARK_TOKEN: undefined, ...env },
  });
  const exit = await p.exited;
  return { code: exit.code, stdout: p.stdout, stderr: p.stderr };
}

async function count(sql: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`);
  return rows[0]?.n ?? -1;
}

test('the first admin token is made on DATABASE_URL and works against tidemark api', async () => {
  const made = await cli(['token', 'create', '--admin', '--name', 'bootstrap']);
  assert.equal(made.code, 0, made.stderr);
  const token = made.stdout.trim();
  assert.match(token, /^tdm_[A-Za-z0-9_-]{43}$/);
  assert.match(made.stderr, /all tenants \(admin\), made through the database at .* \(DATABASE_URL\)/);

  const api = spawnTidemark(['api', '--port', '0'], { env: { DATABASE_URL: db.url } });
  try {
    const [, url] = await api.waitFor(/listening on (\S+)/);
    const listed = await cli(['tenant', 'ls', '--json'], { TIDEMARK_URL: url, TIDEMARK_TOKEN: token });
    assert.equal(listed.code, 0, listed.stderr);
    const ids = (JSON.parse(listed.stdout) as { items: { id: string }[] }).items.map((t) => t.id);
    assert.deepEqual(ids, ['default'], 'the migrations make the default tenant');
    const refused = await fetch(`${url}/v1/tenants`, { headers: { authorization: 'Bearer tdm_wrong' } });
    assert.equal(refused.status, 401);
  } finally {
    await api.kill('SIGTERM');
  }
});

test('tenants and their tokens are made on DATABASE_URL; a token for a missing tenant says how to make it', async () => {
  const missing = await cli(['token', 'create', '--tenant', 'acme']);
  assert.notEqual(missing.code, 0);
  assert.match(missing.stderr, /--tenant: no tenant acme \(create it: tidemark tenant create acme\)/);
  assert.equal(await count("api_tokens WHERE tenant_id = 'acme'"), 0);

  const created = await cli(['tenant', 'create', 'acme', '--name', 'Acme', '--max-running', '5']);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /tenant acme \(Acme\), quota 5/);
  const listed = JSON.parse((await cli(['tenant', 'ls', '--json'])).stdout) as { items: { id: string }[] };
  assert.deepEqual(
    listed.items.map((t) => t.id),
    ['acme', 'default'],
  );
  const token = await cli(['token', 'create', '--tenant', 'acme']);
  assert.equal(token.code, 0, token.stderr);
  const tokens = JSON.parse((await cli(['token', 'ls', '--tenant', 'acme', '--json'])).stdout) as {
    items: { id: string }[];
  };
  assert.equal(tokens.items.length, 1);
  const revoked = await cli(['token', 'revoke', tokens.items[0]?.id ?? '']);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal(await count("api_tokens WHERE tenant_id = 'acme' AND revoked_at IS NULL"), 0);
});

test('bad input is refused naming what was wrong, and changes nothing', async () => {
  const before = [await count('tenants'), await count('api_tokens')];
  const cases: [string[], RegExp][] = [
    [['tenant', 'create', 'Bad Id'], /tenant id: Expected string to match/],
    [['tenant', 'create', 'ok-id', '--max-running', '0'], /--max-running: .*(>=|greater|minimum)/i],
    [['tenant', 'create', 'ok-id', '--name', 'x'.repeat(201)], /--name: /],
    [['token', 'create', '--admin', '--tenant', 'acme'], /--admin and --tenant: give one of them/],
    [['token', 'create', '--admin', '--rate=-1'], /--rate: /],
    [['token', 'revoke', 'not-a-uuid'], /token id: "not-a-uuid" is not a token id/],
  ];
  for (const [args, expected] of cases) {
    const r = await cli(args);
    assert.notEqual(r.code, 0, args.join(' '));
    assert.match(r.stderr, expected, args.join(' '));
  }
  assert.deepEqual([await count('tenants'), await count('api_tokens')], before);
});
