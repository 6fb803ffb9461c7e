/** `tidemark queue ls|show|pause|resume|set|changes`: queue settings and pause over the HTTP API (admin token). */
import { UsageError } from '../usage-error.ts';
import { parseIntOption } from './api-client.ts';
import { block, print, table } from './output.ts';
import { str, subcommands } from './subcommands.ts';

interface Queue {
  name: string;
  maxRunning: number | null;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  timeoutMs: number | null;
  configured: boolean;
  paused: boolean;
  pausedAt: string | null;
  pausedBy: string | null;
}

interface QueueChange {
  at: string;
  by: string;
  change: string;
  before: Record<string, unknown>;
  after: Record<string, unknown>;
}

function queueName(args: string[]): string {
  const [name, ...extra] = args;
  if (name === undefined) throw new UsageError('name the queue');
  if (extra.length > 0) throw new UsageError(`one queue at a time (also given: ${extra.join(' ')})`);
  return encodeURIComponent(name);
}

function showQueue(q: Queue): string {
  return block([
    ['name', q.name],
    ['paused', q.paused ? `since ${q.pausedAt ?? '?'} by ${q.pausedBy ?? '?'}` : 'no'],
    ['maxRunning', q.maxRunning ?? 'none'],
    ['maxAttempts', q.maxAttempts],
    ['backoffBaseMs', q.backoffBaseMs],
    ['backoffMaxMs', q.backoffMaxMs],
    ['timeoutMs', q.timeoutMs ?? 'none'],
    ['configured', q.configured],
  ]);
}

/** An integer flag that also takes `none` (null: no limit). */
function nullableInt(name: string, value: string | undefined): number | null | undefined {
  if (value === 'none') return null;
  return parseIntOption(name, value);
}

/** What changed between two snapshots, as `field a→b`. */
function diff(before: Record<string, unknown>, after: Record<string, unknown>): string {
  return Object.keys(after)
    .filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]))
    .map((k) => `${k} ${JSON.stringify(before[k])}→${JSON.stringify(after[k])}`)
    .join(', ');
}

export const command = subcommands(
  'queue',
  'queue settings, pause and resume cluster-wide, and their audit (HTTP API)',
  {
    ls: {
      usage: 'ls',
      async run(api, _args, v) {
        const page = await api.call<{ items: Queue[] }>('GET', '/v1/queues');
        print(v.json === true, page, () =>
          table(
            ['name', 'paused', 'max running', 'max attempts', 'backoff ms', 'timeout ms'],
            page.items.map((q) => [
              q.name,
              q.paused ? `by ${q.pausedBy ?? '?'}` : 'no',
              q.maxRunning ?? 'none',
              q.maxAttempts,
              `${q.backoffBaseMs}..${q.backoffMaxMs}`,
              q.timeoutMs ?? 'none',
            ]),
          ),
        );
        return 0;
      },
    },
    show: {
      usage: 'show <queue>',
      async run(api, args, v) {
        const q = await api.call<Queue>('GET', `/v1/queues/${queueName(args)}`);
        print(v.json === true, q, () => showQueue(q));
        return 0;
      },
    },
    pause: {
      usage: 'pause <queue>   (every claim skips it; running jobs finish)',
      async run(api, args, v) {
        const q = await api.call<Queue>('POST', `/v1/queues/${queueName(args)}/pause`);
        print(v.json === true, q, () => `queue ${q.name} paused\n`);
        return 0;
      },
    },
    resume: {
      usage: 'resume <queue>',
      async run(api, args, v) {
        const q = await api.call<Queue>('POST', `/v1/queues/${queueName(args)}/resume`);
        print(v.json === true, q, () => `queue ${q.name} resumed\n`);
        return 0;
      },
    },
    set: {
      usage:
        'set <queue> [--max-running N|none] [--max-attempts N] [--backoff-base-ms N] [--backoff-max-ms N] [--timeout-ms N|none]',
      options: {
        'max-running': { type: 'string' },
        'max-attempts': { type: 'string' },
        'backoff-base-ms': { type: 'string' },
        'backoff-max-ms': { type: 'string' },
        'timeout-ms': { type: 'string' },
      },
      async run(api, args, v) {
        const name = queueName(args);
        const body = {
          maxRunning: nullableInt('max-running', str(v, 'max-running')),
          maxAttempts: parseIntOption('max-attempts', str(v, 'max-attempts')),
          backoffBaseMs: parseIntOption('backoff-base-ms', str(v, 'backoff-base-ms')),
          backoffMaxMs: parseIntOption('backoff-max-ms', str(v, 'backoff-max-ms')),
          timeoutMs: nullableInt('timeout-ms', str(v, 'timeout-ms')),
        };
        if (Object.values(body).every((x) => x === undefined)) {
          throw new UsageError(
            'name a setting: --max-running, --max-attempts, --backoff-base-ms, --backoff-max-ms, --timeout-ms',
          );
        }
        const q = await api.call<Queue>('PATCH', `/v1/queues/${name}`, body);
        print(v.json === true, q, () => showQueue(q));
        return 0;
      },
    },
    changes: {
      usage: 'changes <queue> [--limit N]',
      options: { limit: { type: 'string' } },
      async run(api, args, v) {
        const limit = parseIntOption('limit', str(v, 'limit')) ?? 100;
        const page = await api.call<{ changes: QueueChange[] }>(
          'GET',
          `/v1/queues/${queueName(args)}/changes?limit=${limit}`,
        );
        print(v.json === true, page, () =>
          table(
            ['at', 'by', 'change', 'what'],
            page.changes.map((c) => [c.at, c.by, c.change, diff(c.before, c.after)]),
          ),
        );
        return 0;
      },
    },
  },
);
