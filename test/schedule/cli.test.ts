/** `tidemark next` and `tidemark explain`, run as a process as a user runs them. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { CLI } from '../support/processes.ts';

function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...CLI, ...args], (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

test('next --json prints UTC instants and local times with offsets across a DST gap', async () => {
  const r = await run(
    'next',
    '30 2 * * *',
    '--tz',
    'America/New_York',
    '--from',
    '2026-03-07T00:00:00Z',
    '--count',
    '2',
    '--json',
  );
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), [
    { at: '2026-03-07T07:30:00.000Z', local: '2026-03-07T02:30:00-05:00' },
    { at: '2026-03-08T07:00:00.000Z', local: '2026-03-08T03:00:00-04:00' },
  ]);
});

test('next honours --dst-overlap and prints a description in text mode', async () => {
  const r = await run(
    'next',
    '30 1 * * *',
    '--tz',
    'America/New_York',
    '--from',
    '2026-11-01T00:00:00Z',
    '--count',
    '2',
    '--dst-overlap',
    'both',
  );
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split('\n'), [
    'At 01:30 (America/New_York)',
    '2026-11-01T05:30:00.000Z  2026-11-01T01:30:00-04:00',
    '2026-11-01T06:30:00.000Z  2026-11-01T01:30:00-05:00',
  ]);
});

test('a bad spec exits 2 naming the field', async () => {
  const r = await run('next', '61 * * * *');
  assert.equal(r.code, 2);
  assert.equal(r.stderr, 'tidemark next: minute field: 61 is out of range 0-59\n');
  const zone = await run('next', '0 9 * * *', '--tz', 'Nowhere/Land');
  assert.equal(zone.code, 2);
  assert.match(zone.stderr, /timeZone field: 'Nowhere\/Land' is not a known IANA time zone/);
});

test('bad flags are usage errors', async () => {
  assert.equal((await run('next', '0 9 * * *', '--dst-gap', 'sideways')).code, 2);
  assert.equal((await run('next', '0 9 * * *', '--count', 'many')).code, 2);
  assert.equal((await run('next', '0 9 * * *', '--from', 'yesterday')).code, 2);
});

test('explain shows what a phrase compiles to', async () => {
  const r = await run('explain', 'every weekday at 9:30', '--tz', 'Europe/London', '--json');
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), {
    kind: 'cron',
    canonical: '30 9 * * 1-5',
    description: 'At 09:30, Monday through Friday (Europe/London)',
    timeZone: 'Europe/London',
    dst: { gap: 'shift', overlap: 'first' },
  });
  const bad = await run('explain', 'every blue moon');
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /Supported phrases/);
});
