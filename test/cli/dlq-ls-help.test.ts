/**
 * `tidemark dlq ls`: its --help lists every flag it accepts, docs/api.md lists the same flags with the
 * same words, and the flags do what they say (filters, --before paging, the first line of the error).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { CONNECTION_OPTIONS } from '../../src/cli/http/api-client.ts';
import { dlqLs } from '../../src/cli/http/dlq.ts';
import { startTestApi } from '../api/support.ts';
import { spawnTidemark } from '../support/processes.ts';

/** The `  --flag VALUE  description` lines of a text. */
function flagLines(text: string): string[] {
  return text.split('\n').filter((line) => /^ {2}--[a-z]/.test(line));
}

test('tidemark dlq ls --help and docs/api.md list the same flags, and every flag it accepts', async () => {
  const help = spawnTidemark(['dlq', 'ls', '--help']);
  assert.equal((await help.exited).code, 0, help.stderr);
  const fromHelp = flagLines(help.stdout);

  const docs = await readFile(new URL('../../docs/api.md', import.meta.url), 'utf8');
  const section = docs.split('### `tidemark dlq ls`')[1]?.split('\n## ')[0] ?? '';
  const block = /```\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  assert.deepEqual(flagLines(block), fromHelp, 'docs/api.md and --help differ');

  const accepted = [...Object.keys(dlqLs.options ?? {}), ...Object.keys(CONNECTION_OPTIONS)]
    .filter((flag) => flag !== 'help')
    .sort();
  const listed = fromHelp.map((line) => /^ {2}--([a-z-]+)/.exec(line)?.[1] ?? '').sort();
  assert.deepEqual(listed, accepted, 'every accepted flag is documented, and only those');
  for (const flag of accepted) assert.match(dlqLs.usage, new RegExp(`--${flag}\\b`), `usage shows --${flag}`);
});

test('tidemark dlq ls: filters, --before pages, the table shows the first line of the last error', async () => {
  const api = await startTestApi();
  const { rows } = await api.db.pool.query<{ id: number }>(
    `INSERT INTO jobs (queue, kind, tenant_id, state, idempotency_key, key_generated, attempt, finished_at, last_error)
     SELECT CASE WHEN i % 2 = 0 THEN 'even' ELSE 'odd' END, 'k', 'acme', 'dead', 'dead-' || i, true, 3, now(),
            'Error: boom ' || i || E'\\n    at handler (file.js:1:1)'
       FROM generate_series(1, 5) i
     RETURNING id`,
  );
  const ids = rows.map((r) => r.id).sort((a, b) => b - a);
  const auth = ['--url', api.url, '--token', api.tokens.admin];
  const run = async (...args: string[]) => {
    const p = spawnTidemark(['dlq', 'ls', ...args, ...auth]);
    const exit = await p.exited;
    assert.equal(exit.code, 0, p.stderr);
    return p.stdout;
  };
  const first = await run('--limit', '2');
  assert.match(first, /boom \d+\n/);
  assert.doesNotMatch(first, /at handler/, 'only the first line of the error');
  const next = /next page: tidemark dlq ls (.*)\n/.exec(first)?.[1];
  assert.equal(next, `--limit 2 --before ${ids[1]}`);
  const page2 = JSON.parse(await run('--json', ...(next ?? '').split(' '))) as {
    items: { id: number; lastError: string }[];
    next: number | null;
  };
  assert.deepEqual(
    page2.items.map((j) => j.id),
    ids.slice(2, 4),
  );
  assert.match(page2.items[0]?.lastError ?? '', /at handler/, '--json keeps the whole error');
  const odd = JSON.parse(await run('--json', '--queue', 'odd', '--kind', 'k', '--tenant', 'acme')) as {
    items: { queue: string }[];
  };
  assert.deepEqual(
    odd.items.map((j) => j.queue),
    ['odd', 'odd', 'odd'],
  );
});
