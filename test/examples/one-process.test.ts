// The README's one-process program, extracted from the README and run as written (its `tidemark`
// import pointed at this checkout) against a fresh, unmigrated database.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '../../src/index.ts';
import { createEmptyDatabase } from '../support/db.ts';

/** Runs a TypeScript file with tsx to its end; killed if it runs past `timeoutMs`. */
function runTs(
  file: string,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), file], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((done) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    }),
  );
}

const db = await createEmptyDatabase();

test("the README's one-process program: a schedule's push arrives, the workflow ends through its signal timeout", async () => {
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
  const source = /```ts\n(\/\/ one-process\.ts\n[\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(source !== undefined, 'the README has the one-process example');
  assert.ok(source.trimEnd().split('\n').length < 40, 'the example is under 40 lines');
  const index = fileURLToPath(new URL('../../src/index.ts', import.meta.url));
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-one-process-'));
  after(() => rm(dir, { recursive: true, force: true }));
  // An ES module project, as top-level await needs.
  await writeFile(join(dir, 'package.json'), '{ "type": "module" }\n');
  const file = join(dir, 'one-process.ts');
  await writeFile(file, source.replace("from 'tidemark'", `from ${JSON.stringify(index)}`));

  // A program that does not end by itself (a handle left open) is killed and fails here.
  const program = await runTs(file, { DATABASE_URL: db.url, TIDEMARK_LOG_LEVEL: 'warn' }, 60_000);
  assert.equal(program.code, 0, program.stderr);

  // It printed what its receiver got: the workflow's push after the timeout, and the schedule's.
  assert.match(program.stdout, /^release-42 succeeded pushed \[/m);
  assert.match(program.stdout, /'POST \/announce'/);
  await using client = new Client({ pool: db.pool });
  const { nodes } = await client.workflows.nodes('release-42', {});
  const approve = nodes.find((n) => n.key === 'approve');
  assert.equal(approve?.state, 'succeeded');
  const { rows: signals } = await db.pool.query('SELECT 1 FROM workflow_signals');
  assert.equal(signals.length, 0, 'no signal was sent: the node ended by its timeout');
  const { rows: jobs } = await db.pool.query<{ kind: string; state: string; url: string; key: string }>(
    "SELECT kind, state, payload->>'url' AS url, idempotency_key AS key FROM jobs ORDER BY id",
  );
  assert.ok(jobs.length >= 1);
  for (const job of jobs) assert.equal(job.kind, 'http.post');
  const announce = jobs.find((j) => j.url.endsWith('/announce'));
  assert.equal(announce?.state, 'succeeded');
  const ticks = jobs.filter((j) => j.url.endsWith('/tick'));
  assert.ok(
    ticks.some((j) => j.state === 'succeeded'),
    `schedule jobs: ${JSON.stringify(ticks)}`,
  );
  assert.match(program.stdout, /'POST \/tick'/, 'the schedule pushed to the receiver');
});
