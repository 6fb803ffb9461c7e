/**
 * One contract for every entry point: the same bad job or schedule is refused by the TypeScript
 * client, the HTTP API and the CLI (which talks to the API) with the same field, relative to the
 * input (the API prefixes `body.`), and the same reason, and nothing is written to the database.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Client, TidemarkError, ValidationError, type InputProblem } from '../../src/index.ts';
import { databaseSnapshot, startTestApi } from '../api/support.ts';
import { spawnTidemark } from '../support/processes.ts';

const api = await startTestApi();
const client = new Client({ pool: api.db.pool });
const dir = await mkdtemp(join(tmpdir(), 'tidemark-contract-'));
after(() => rm(dir, { recursive: true, force: true }));

interface Case {
  name: string;
  input: Record<string, unknown>;
  field: string;
  /** The same input given as CLI flags, where the CLI has flags for it. */
  flags?: string[];
}

const job = { queue: 'contract', kind: 'k' };
const JOB_CASES: Case[] = [
  { name: 'an unknown field', input: { ...job, maxAtempts: 2 }, field: 'maxAtempts' },
  {
    name: 'a priority out of range',
    input: { ...job, priority: 1_000_001 },
    field: 'priority',
    flags: ['--queue', 'contract', '--kind', 'k', '--priority', '1000001'],
  },
  {
    name: 'maxAttempts over the limit',
    input: { ...job, maxAttempts: 1001 },
    field: 'maxAttempts',
    flags: ['--queue', 'contract', '--kind', 'k', '--max-attempts', '1001'],
  },
  {
    name: 'a too-long idempotency key',
    input: { ...job, idempotencyKey: 'k'.repeat(501) },
    field: 'idempotencyKey',
    flags: ['--queue', 'contract', '--kind', 'k', '--key', 'k'.repeat(501)],
  },
  {
    name: 'a bad queue name',
    input: { ...job, queue: 'no spaces' },
    field: 'queue',
    flags: ['--queue', 'no spaces', '--kind', 'k'],
  },
];

const schedule = { name: 'contract', spec: 'every 1h', target: { queue: 'contract', kind: 'k' } };
const base = ['--name', 'contract', '--spec', 'every 1h', '--kind', 'k'];
const SCHEDULE_CASES: Case[] = [
  { name: 'an unknown field', input: { ...schedule, misfirePolicy: 'all' }, field: 'misfirePolicy' },
  {
    name: 'an unknown target field',
    input: { ...schedule, target: { ...schedule.target, maxAtempts: 2 } },
    field: 'target.maxAtempts',
  },
  {
    name: 'a priority out of range',
    input: { ...schedule, target: { ...schedule.target, priority: -1_000_001 } },
    field: 'target.priority',
    flags: [...base, '--queue', 'contract', '--priority=-1000001'],
  },
  {
    name: 'maxAttempts over the limit',
    input: { ...schedule, target: { ...schedule.target, maxAttempts: 1001 } },
    field: 'target.maxAttempts',
    flags: [...base, '--queue', 'contract', '--max-attempts', '1001'],
  },
  {
    name: 'a bad queue name',
    input: { ...schedule, target: { ...schedule.target, queue: 'no spaces' } },
    field: 'target.queue',
    flags: [...base, '--queue', 'no spaces'],
  },
];

async function clientProblems(fn: () => Promise<unknown>): Promise<InputProblem[]> {
  try {
    await fn();
  } catch (error) {
    assert.ok(error instanceof ValidationError, `a ValidationError, got ${String(error)}`);
    assert.ok(error instanceof TidemarkError);
    assert.equal(error.code, 'invalid_request');
    return error.fields;
  }
  assert.fail('the client accepted it');
}

async function apiProblems(path: string, body: unknown): Promise<InputProblem[]> {
  const r = await api.call<{ error: { code: string; fields: InputProblem[] } }>('POST', path, { body });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.body.error.code, 'invalid_request');
  return r.body.error.fields.map((f) => {
    assert.ok(f.field.startsWith('body.'), f.field);
    return { field: f.field.slice('body.'.length), reason: f.reason };
  });
}

/** The CLI's refusal: exit 1 and `body.<field>: <reason>` on stderr, for each field the API named. */
async function cliRefuses(args: string[], problems: InputProblem[]): Promise<void> {
  const p = spawnTidemark(args, {
    env: { TIDEMARK_URL: api.url, TIDEMARK_TOKEN: api.tokens.admin, DATABASE_URL: undefined },
  });
  const { code } = await p.exited;
  assert.equal(code, 1, `stdout: ${p.stdout}\nstderr: ${p.stderr}`);
  for (const f of problems) assert.ok(p.stderr.includes(`body.${f.field}: ${f.reason}`), p.stderr);
}

for (const [what, cases, path, command, call] of [
  ['job', JOB_CASES, '/v1/jobs', ['job', 'add'], (i: never) => client.jobs.enqueue(i)],
  [
    'schedule',
    SCHEDULE_CASES,
    '/v1/schedules',
    ['schedule', 'add'],
    (i: never) => client.schedules.create(i),
  ],
] as const) {
  for (const c of cases) {
    test(`a ${what} with ${c.name} is refused alike by the client, the API and the CLI`, async () => {
      const before = await databaseSnapshot(api.db);
      const fromClient = await clientProblems(() => call(c.input as never));
      assert.deepEqual(
        fromClient.map((f) => f.field),
        [c.field],
      );
      assert.deepEqual(await apiProblems(path, c.input), fromClient);
      const file = join(dir, `${what}-${c.field}.json`);
      await writeFile(file, JSON.stringify(c.input));
      await cliRefuses([...command, '--file', file], fromClient);
      if (c.flags !== undefined) await cliRefuses([...command, ...c.flags], fromClient);
      assert.equal(await databaseSnapshot(api.db), before, 'nothing was written');
    });
  }
}

test('the same limits hold for a batch: the client and the API name the job by its index', async () => {
  const jobs = [job, { ...job, priority: 1_000_001 }];
  const fromClient = await clientProblems(() => client.jobs.enqueueMany(jobs));
  assert.deepEqual(
    fromClient.map((f) => f.field),
    ['jobs.1.priority'],
  );
  assert.deepEqual(await apiProblems('/v1/jobs', { jobs }), fromClient);
});

test('the limits are the same at their edges: what the API takes, the client takes', async () => {
  const edge = { ...job, priority: -1_000_000, maxAttempts: 1000, idempotencyKey: 'e'.repeat(500) };
  const fromClient = await client.jobs.enqueue(edge);
  assert.equal(fromClient.created, true);
  const again = await api.call<{ id: number; created: boolean }>('POST', '/v1/jobs', { body: edge });
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(again.body.id, fromClient.id);
});
