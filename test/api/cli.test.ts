/**
 * The quick start as written in docs/api.md, against a real `tidemark dev` process: register "every
 * weekday at 9am" for a URL target with the CLI, trigger it now, see the delivery and the history.
 * Then the other CLI commands over the same API, their --json output and their errors.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createTestDatabase } from '../support/db.ts';
import { spawnTidemark } from '../support/processes.ts';

const db = await createTestDatabase();
const dir = await mkdtemp(join(tmpdir(), 'tidemark-cli-'));
await chmod(dir, 0o755);
after(() => rm(dir, { recursive: true, force: true }));

const dev = spawnTidemark(['dev', '--data-dir', dir], {
  env: { DATABASE_URL: db.url, TIDEMARK_API_PORT: '0' },
});
const [, url] = await dev.waitFor(/TIDEMARK_URL=(\S+)/);
const [, adminToken] = await dev.waitFor(/TIDEMARK_TOKEN=(\S+)/);
assert.ok(url !== undefined && adminToken !== undefined);
after(async () => {
  await dev.kill('SIGTERM');
});

const received: IncomingHttpHeaders[] = [];
const hook = createServer((req, res) => {
  received.push(req.headers);
  req.resume();
  req.on('end', () => res.end('ok'));
});
await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
after(() => new Promise<void>((r) => hook.close(() => r())));
const hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/standup`;

async function cli(
  args: string[],
  token: string | undefined = adminToken,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnTidemark(args, {
    env: { TIDEMARK_URL: url, TIDEMARK_TOKEN: token, DATABASE_URL: undefined },
  });
  const exit = await p.exited;
  return { code: exit.code, stdout: p.stdout, stderr: p.stderr };
}

async function until<T>(fn: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('quick start: a tenant token, a weekday-9am schedule for a URL, trigger now, delivery, history', async () => {
  const tenant = await cli(['token', 'create', '--tenant', 'default']);
  assert.equal(tenant.code, 0, tenant.stderr);
  const token = tenant.stdout.trim();
  assert.match(token, /^tdm_/);

  const add = await cli(
    [
      'schedule',
      'add',
      '--name',
      'standup',
      '--spec',
      'every weekday at 9am',
      '--tz',
      'Europe/Berlin',
      '--target-url',
      hookUrl,
      '--json',
    ],
    token,
  );
  assert.equal(add.code, 0, add.stderr);
  const schedule = JSON.parse(add.stdout) as {
    id: string;
    compiled: { canonical: string };
    nextFireTimes: string[];
  };
  assert.equal(schedule.compiled.canonical, '0 9 * * 1-5');
  assert.equal(schedule.nextFireTimes.length, 5);

  const shown = await cli(['schedule', 'show', schedule.id], token);
  assert.match(shown.stdout, /compiled\s+0 9 \* \* 1-5/);

  const trigger = await cli(['schedule', 'trigger', schedule.id], token);
  assert.equal(trigger.code, 0, trigger.stderr);
  const jobId = Number(/job (\d+)/.exec(trigger.stdout)?.[1]);
  await until(() => Promise.resolve(received.length > 0 ? true : undefined), 'the push delivery');
  assert.equal(received[0]?.['tidemark-job-id'], String(jobId));

  const history = await cli(['schedule', 'history', schedule.id], token);
  assert.equal(history.code, 0, history.stderr);
  assert.match(history.stdout, /FIRE TIME\s+STATE\s+SOURCE/);
  assert.match(history.stdout, new RegExp(`enqueued\\s+trigger\\s+\\S+ s\\s+${jobId}`));
  const daily = await cli(['schedule', 'history', schedule.id, '--days', '2'], token);
  assert.equal(daily.code, 0, daily.stderr);
  // Today's row: nothing scheduled yet, the one trigger-now.
  assert.match(daily.stdout, /DAY \(UTC\)\s+SCHEDULED\s+TRIGGERED/);
  assert.match(daily.stdout, new RegExp(`${new Date().toISOString().slice(0, 10)}\\s+0\\s+1\\s+0\\s+0\\s+0`));
  const job = await until(async () => {
    const r = await cli(['job', 'show', String(jobId), '--json'], token);
    const j = JSON.parse(r.stdout) as { state: string };
    return j.state === 'succeeded' ? j : undefined;
  }, 'the job to succeed');
  assert.equal(job.state, 'succeeded');
});

test('job add from a file in chunks with progress, ls, dlq, and errors that exit non-zero with the API message', async () => {
  const file = join(dir, 'jobs.json');
  await writeFile(
    file,
    JSON.stringify(
      Array.from({ length: 2500 }, (_, i) => ({
        queue: 'bulk',
        kind: 'n',
        idempotencyKey: `n-${i}`,
        payload: { batch: i % 1000 },
      })),
    ),
  );
  const bulk = await cli(['job', 'add', '--file', file]);
  assert.equal(bulk.code, 0, bulk.stderr);
  assert.match(bulk.stdout, /2500 enqueued, 0 already there/);
  assert.match(bulk.stderr, /enqueued: 1000\/2500/);
  assert.match(bulk.stderr, /enqueued: 2500\/2500/);
  const { rows } = await db.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM jobs WHERE queue = 'bulk'",
  );
  assert.equal(rows[0]?.n, 2500);

  const ls = await cli(['job', 'ls', '--queue', 'bulk', '--limit', '3']);
  const lines = ls.stdout.trim().split('\n');
  assert.equal(lines.length, 5, ls.stdout);
  assert.match(lines[4] ?? '', /^next page: tidemark job ls --queue bulk --limit 3 --before \d+$/);
  const byPayload = await cli(['job', 'ls', '--queue', 'bulk', '--payload', 'batch=7', '--json']);
  assert.equal(byPayload.code, 0, byPayload.stderr);
  assert.deepEqual(
    (JSON.parse(byPayload.stdout) as { items: { payload: unknown }[] }).items.map((j) => j.payload),
    [{ batch: 7 }, { batch: 7 }, { batch: 7 }],
  );
  const badPayload = await cli(['job', 'ls', '--payload', '{"batch": 7']);
  assert.equal(badPayload.code, 1);
  assert.match(badPayload.stderr, /query\.payload: is not valid JSON/);

  await db.pool.query(
    "UPDATE jobs SET state = 'dead', finished_at = now() WHERE queue = 'bulk' AND idempotency_key IN ('n-1', 'n-2')",
  );
  const dlq = await cli(['dlq', 'ls', '--queue', 'bulk']);
  assert.equal(dlq.stdout.trim().split('\n').length, 3, dlq.stdout);
  const retry = await cli(['dlq', 'retry', '--queue', 'bulk', '--json']);
  assert.equal(retry.code, 0, retry.stderr);
  assert.equal((JSON.parse(retry.stdout) as { retried: number[] }).retried.length, 2);

  const bad = await cli([
    'schedule',
    'add',
    '--name',
    'x',
    '--spec',
    'every blue moon',
    '--queue',
    'q',
    '--kind',
    'k',
  ]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /400: body\.spec/);
  const missing = await cli(['job', 'show', '424242']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /404: job 424242 not found/);
  const noToken = await cli(['job', 'ls'], '');
  assert.equal(noToken.code, 2);
  assert.match(noToken.stderr, /no token/);
  const revoked = await cli(['token', 'create', '--tenant', 'default', '--json']);
  const { id, token } = JSON.parse(revoked.stdout) as { id: string; token: string };
  assert.equal((await cli(['token', 'revoke', id])).code, 0);
  const refused = await cli(['job', 'ls'], token);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /401: token unknown or revoked/);
});

test('schedule backfill: a dry run, the backfill, a second one that finds them all, and its refusals', async () => {
  const add = await cli([
    'schedule',
    'add',
    '--name',
    'nightly-cli',
    '--spec',
    '0 3 * * *',
    '--tz',
    'Asia/Kolkata',
    '--queue',
    'reports',
    '--kind',
    'report.build',
    '--json',
  ]);
  assert.equal(add.code, 0, add.stderr);
  const { id } = JSON.parse(add.stdout) as { id: string };
  // 03:00 in Kolkata (UTC+5:30) is 21:30 UTC the day before: three fire times in three recent
  // days. Older than the ledger's 30 days, dev's maintenance role could prune them between calls.
  const DAY = 86_400_000;
  const from = new Date(Math.floor(Date.now() / DAY) * DAY - 4 * DAY);
  const to = new Date(from.getTime() + 3 * DAY);
  const at = (days: number) => new Date(from.getTime() + days * DAY + 21.5 * 3_600_000).toISOString();
  const range = ['--from', from.toISOString(), '--to', to.toISOString()];
  const dry = await cli(['schedule', 'backfill', id, ...range, '--dry-run']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.ok(dry.stdout.includes(`${at(0)} … ${at(2)}`), dry.stdout);
  assert.match(dry.stdout, /fire times\s+3: /);
  assert.match(dry.stdout, /would create\s+3\n/);
  const done = await cli(['schedule', 'backfill', id, ...range]);
  assert.match(done.stdout, /created\s+3\n/);
  const again = await cli(['schedule', 'backfill', id, ...range, '--json']);
  const r = JSON.parse(again.stdout) as { created: number; existing: number };
  assert.deepEqual([r.created, r.existing], [0, 3]);
  const history = await cli(['schedule', 'history', id]);
  assert.equal(history.stdout.match(/enqueued\s+backfill/g)?.length, 3, history.stdout);

  const backwards = await cli([
    'schedule',
    'backfill',
    id,
    '--from',
    to.toISOString(),
    '--to',
    from.toISOString(),
  ]);
  assert.equal(backwards.code, 1);
  assert.match(backwards.stderr, /400: body\.to: must be after from/);
  const noRange = await cli(['schedule', 'backfill', id, '--from', from.toISOString()]);
  assert.equal(noRange.code, 2);
  assert.match(noRange.stderr, /--from and --to are required/);
  const help = await cli(['schedule', 'backfill', '--help']);
  assert.match(help.stdout, /--dry-run/);
});

test('workflow submit, ls, show, signal, cancel and resume from the CLI', async () => {
  const file = join(dir, 'wf.json');
  await writeFile(
    file,
    JSON.stringify({
      id: 'cli-wf',
      nodes: [
        { id: 'a', queue: 'etl', kind: 'x' },
        { id: 'gate', type: 'signal', signal: 'go', dependsOn: ['a'] },
      ],
    }),
  );
  const submit = await cli(['workflow', 'submit', file]);
  assert.equal(submit.code, 0, submit.stderr);
  assert.match(submit.stdout, /workflow cli-wf: submitted \(2 nodes, 1 edges\)/);
  const show = await cli(['workflow', 'show', 'cli-wf']);
  assert.match(show.stdout, /state\s+running/);
  const ls = await cli(['workflow', 'ls', '--state', 'running', '--limit', '5']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, /cli-wf\s+cli-wf\s+default\s+running\s+2\s+2\s+0/);
  const badState = await cli(['workflow', 'ls', '--state', 'asleep']);
  assert.notEqual(badState.code, 0);
  assert.match(badState.stderr, /query\.state/);
  const signal = await cli(['workflow', 'signal', 'cli-wf', 'go', '--payload', '{"ok":true}']);
  assert.match(signal.stdout, /signal go: accepted/);
  const typo = await cli(['workflow', 'signal', 'cli-wf', 'og']);
  assert.equal(typo.code, 1, 'a signal no node declares exits non-zero');
  assert.match(
    typo.stderr,
    /404: workflow 'cli-wf' has no signal node named 'og'; its signal nodes wait for: go/,
  );
  assert.match((await cli(['workflow', 'cancel', 'cli-wf'])).stdout, /cancelled/);
  assert.match((await cli(['workflow', 'resume', 'cli-wf'])).stdout, /running/);
});
