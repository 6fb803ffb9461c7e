/** `tidemark scheduler` flags: bad values exit 2 naming the flag, before any database work. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { spawnTidemark } from '../support/processes.ts';

const UNREACHABLE = 'postgres://nobody@127.0.0.1:1/none';

test('bad flags are refused with exit code 2 and the flag named; --help lists them', async () => {
  const cases: [string[], RegExp][] = [
    [['--plan-ahead', 'soon'], /--plan-ahead: 'soon' is not a duration/],
    [['--tick', '0'], /--tick: must be at least 1 ms/],
    [['--lease-ttl', '2s', '--renew-every', '3s'], /--renew-every: 3000 ms must be shorter than --lease-ttl/],
    [['--due-index', 'tree'], /--due-index: 'tree' is not one of heap, wheel, db/],
    [['--writers', '0'], /--writers: '0' is not a positive integer/],
    [['--writers', '-1'], /Option '--writers' argument is ambiguous/],
    [['--no-such-flag'], /Unknown option '--no-such-flag'/],
  ];
  for (const [args, message] of cases) {
    const p = spawnTidemark(['scheduler', ...args], { env: { DATABASE_URL: UNREACHABLE } });
    const exit = await p.exited;
    assert.equal(exit.code, 2, `${args.join(' ')}: ${p.stderr}`);
    assert.match(p.stderr, message);
  }
  const help = spawnTidemark(['scheduler', '--help'], { env: { DATABASE_URL: UNREACHABLE } });
  assert.equal((await help.exited).code, 0);
  assert.match(help.stdout, /--plan-ahead DURATION/);
});
