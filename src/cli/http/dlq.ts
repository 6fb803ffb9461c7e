/** `tidemark dlq ls|retry`: the dead letter over the HTTP API. */
import { UsageError } from '../usage-error.ts';
import { parseIntOption, progress } from './api-client.ts';
import { print, table } from './output.ts';
import { str, subcommands, type Sub } from './subcommands.ts';

interface DeadJob {
  id: number;
  queue: string;
  kind: string;
  tenantId: string;
  attempt: number;
  finishedAt: string | null;
  lastError: string | null;
}

const BATCH = 1000;

/** The query of the next page as the flags that ask for it. */
function nextFlags(q: URLSearchParams): string {
  const flag: Record<string, string> = { tenantId: 'tenant' };
  return [...q.entries()].map(([k, value]) => `--${flag[k] ?? k} ${value}`).join(' ');
}

/** `tidemark dlq ls`; its --help is what docs/api.md lists (test/cli/dlq-ls-help.test.ts compares them). */
export const dlqLs: Sub = {
  usage: 'ls [--queue Q] [--kind K] [--tenant T] [--before ID] [--limit N] [--json] [--url URL] [--token T]',
  help: `Dead jobs, newest first (GET /v1/dead-letter). A tenant token sees only its own tenant.

options:
  --queue Q      only jobs of queue Q
  --kind K       only jobs of kind K
  --tenant T     only tenant T's jobs (an admin token; a tenant token always sees its own)
  --before ID    the page after: jobs with an id below ID (the "next" a page ends with)
  --limit N      jobs per page, 1 to 1000 (default 50)
  --json         the API's JSON: { "items": [...], "next": ID or null }, each item's lastError whole
  --url URL      the API (default TIDEMARK_URL, else http://127.0.0.1:8787)
  --token T      an API token (default TIDEMARK_TOKEN)

The table shows each job's id, queue, kind, tenant, attempts, when it died and the first line of its
last error; when more jobs match, it ends with the command for the next page.
`,
  options: {
    queue: { type: 'string' },
    kind: { type: 'string' },
    tenant: { type: 'string' },
    before: { type: 'string' },
    limit: { type: 'string' },
  },
  async run(api, args, v) {
    if (args.length > 0) throw new UsageError(`dlq ls takes no arguments (got ${args.join(' ')})`);
    const q = new URLSearchParams();
    for (const [opt, param] of [
      ['queue', 'queue'],
      ['kind', 'kind'],
      ['tenant', 'tenantId'],
    ] as const) {
      const value = str(v, opt);
      if (value !== undefined) q.set(param, value);
    }
    const before = parseIntOption('before', str(v, 'before'));
    if (before !== undefined) q.set('before', String(before));
    q.set('limit', String(parseIntOption('limit', str(v, 'limit')) ?? 50));
    const page = await api.call<{ items: DeadJob[]; next: number | null }>(
      'GET',
      `/v1/dead-letter?${q.toString()}`,
    );
    print(v.json === true, page, () => {
      const rows = table(
        ['id', 'queue', 'kind', 'tenant', 'attempts', 'died', 'last error'],
        page.items.map((j) => [
          j.id,
          j.queue,
          j.kind,
          j.tenantId,
          j.attempt,
          j.finishedAt,
          j.lastError?.split('\n', 1)[0],
        ]),
      );
      if (page.next === null) return rows;
      q.set('before', String(page.next));
      return `${rows}next page: tidemark dlq ls ${nextFlags(q)}\n`;
    });
    return 0;
  },
};

export const command = subcommands('dlq', 'list and re-run dead jobs through the HTTP API', {
  ls: dlqLs,
  retry: {
    usage: 'retry (<id>… | --queue Q [--kind K] | --all) [--tenant T]',
    options: {
      queue: { type: 'string' },
      kind: { type: 'string' },
      tenant: { type: 'string' },
      all: { type: 'boolean' },
    },
    async run(api, args, v) {
      const ids = args.map((a) => {
        const n = Number(a);
        if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`${a} is not a job id`);
        return n;
      });
      const filter = { queue: str(v, 'queue'), kind: str(v, 'kind'), tenantId: str(v, 'tenant') };
      if (ids.length === 0 && filter.queue === undefined && filter.kind === undefined && v.all !== true) {
        throw new UsageError('name job ids, or a filter (--queue, --kind), or --all');
      }
      const retried: number[] = [];
      const notRetried: number[] = [];
      if (ids.length > 0) {
        for (let i = 0; i < ids.length; i += BATCH) {
          const r = await api.call<{ retried: number[]; notRetried: number[] }>(
            'POST',
            '/v1/dead-letter/retry',
            {
              ids: ids.slice(i, i + BATCH),
              tenantId: filter.tenantId,
            },
          );
          retried.push(...r.retried);
          notRetried.push(...r.notRetried);
          progress('retried', retried.length + notRetried.length, ids.length);
        }
      } else {
        // By filter: batches until the dead letter holds no more matches (re-run jobs leave it).
        for (;;) {
          const r = await api.call<{ retried: number[] }>('POST', '/v1/dead-letter/retry', {
            ...filter,
            limit: BATCH,
          });
          retried.push(...r.retried);
          progress('retried', retried.length, null);
          if (r.retried.length < BATCH) break;
        }
      }
      print(
        v.json === true,
        { retried, notRetried },
        () =>
          `${retried.length} re-run${notRetried.length > 0 ? `; not dead or not found: ${notRetried.join(', ')}` : ''}\n`,
      );
      return notRetried.length > 0 ? 1 : 0;
    },
  },
});
