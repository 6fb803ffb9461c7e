/** `tidemark dlq ls|retry`: the dead letter over the HTTP API. */
import { UsageError } from '../usage-error.ts';
import { parseIntOption, progress } from './api-client.ts';
import { print, table } from './output.ts';
import { str, subcommands } from './subcommands.ts';

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

export const command = subcommands('dlq', 'list and re-run dead jobs through the HTTP API', {
  ls: {
    usage: 'ls [--queue Q] [--kind K] [--tenant T] [--limit N]',
    options: {
      queue: { type: 'string' },
      kind: { type: 'string' },
      tenant: { type: 'string' },
      limit: { type: 'string' },
    },
    async run(api, _args, v) {
      const q = new URLSearchParams();
      for (const [opt, param] of [
        ['queue', 'queue'],
        ['kind', 'kind'],
        ['tenant', 'tenantId'],
      ] as const) {
        const value = str(v, opt);
        if (value !== undefined) q.set(param, value);
      }
      q.set('limit', String(parseIntOption('limit', str(v, 'limit')) ?? 50));
      const page = await api.call<{ items: DeadJob[] }>('GET', `/v1/dead-letter?${q.toString()}`);
      print(v.json === true, page, () =>
        table(
          ['id', 'queue', 'kind', 'tenant', 'attempts', 'died', 'last error'],
          page.items.map((j) => [j.id, j.queue, j.kind, j.tenantId, j.attempt, j.finishedAt, j.lastError]),
        ),
      );
      return 0;
    },
  },
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
