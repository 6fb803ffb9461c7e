/**
 * One queue-settings shape: `tidemark worker --help`, docs/api.md and docs/production.md describe the
 * fields the schema has, with its defaults, and the documented config file parses.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { parseConfigFile } from '../../src/worker/config.ts';
import { QUEUE_DEFAULTS, QueueSettingsSchema } from '../../src/worker/queue-settings.ts';
import { spawnTidemark } from '../support/processes.ts';

const doc = (name: string) => readFile(new URL(`../../docs/${name}`, import.meta.url), 'utf8');
const FIELDS = Object.keys(QueueSettingsSchema.properties) as (keyof typeof QUEUE_DEFAULTS)[];

test('tidemark worker --help shows every queue setting with its default', async () => {
  const help = spawnTidemark(['worker', '--help']);
  assert.equal((await help.exited).code, 0, help.stderr);
  for (const field of FIELDS) {
    assert.match(
      help.stdout,
      new RegExp(`"${field}": ${JSON.stringify(QUEUE_DEFAULTS[field])}[,\\s}]`),
      field,
    );
  }
  for (const local of [
    'leaseMs',
    'pollMs',
    'timeoutGraceMs',
    'shutdownGraceMs',
    'batchSize',
    'registryHeartbeatMs',
  ]) {
    assert.match(help.stdout, new RegExp(`"${local}": \\d+`), local);
  }
  assert.match(help.stdout, /--metrics-port N/);
});

test("docs/api.md's table has every queue setting and its default; docs/production.md's config file parses", async () => {
  const api = await doc('api.md');
  for (const field of FIELDS) {
    const row = new RegExp(`^\\| \`${field}\` +\\| ([^|]+?) +\\|`, 'm').exec(api);
    assert.ok(row !== null, `${field} in docs/api.md`);
    const shown = (row[1] ?? '').replace(/[`,]/g, '');
    assert.equal(shown, String(QUEUE_DEFAULTS[field]), `${field}'s default`);
  }
  const production = await doc('production.md');
  const section = production.split('## Operating queues and workers')[1] ?? '';
  const json = /```json\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(json !== undefined);
  const config = parseConfigFile(JSON.parse(json));
  assert.deepEqual(
    config.queues.map((q) => q.name),
    ['emails', 'reports'],
  );
  assert.equal(config.queues[0]?.settings.maxRunning, 100);
});
