/** `tidemark schedule add|ls|show|pause|resume|trigger|backfill|rm|history` over the HTTP API. */
import { readFile } from 'node:fs/promises';
import { UsageError } from '../usage-error.ts';
import { parseIntOption, parseJsonOption, requireArg, type ApiClient } from './api-client.ts';
import { block, print, table } from './output.ts';
import { str, subcommands, type Sub } from './subcommands.ts';

interface Schedule {
  id: string;
  name: string;
  tenantId: string;
  spec: string;
  compiled: { canonical: string; description: string } | null;
  specError: string | null;
  nextFireTimes: string[];
  target: { queue: string; kind: string; url?: string };
  paused: boolean;
  nextFireAt: string | null;
  lastFireAt: string | null;
  version: number;
}

function show(s: Schedule): string {
  return block([
    ['id', s.id],
    ['name', s.name],
    ['tenant', s.tenantId],
    ['spec', s.spec],
    ['compiled', s.compiled?.canonical ?? '—'],
    ['means', s.compiled?.description ?? `not firing: ${s.specError ?? 'the spec does not compile'}`],
    ['target', s.target.url ?? `${s.target.queue}/${s.target.kind}`],
    ['paused', s.paused],
    ['version', s.version],
    ['last fire', s.lastFireAt],
    ['next fires', s.nextFireTimes.join(', ')],
  ]);
}

interface Backfill {
  from: string;
  to: string;
  dryRun: boolean;
  fireTimes: number;
  firstFireAt: string | null;
  lastFireAt: string | null;
  created: number;
  existing: number;
  existingByState: { enqueued: number; skipped: number; missed: number };
}

function backfillText(r: Backfill): string {
  const e = r.existingByState;
  const there =
    r.existing === 0
      ? 'none already there'
      : `${r.existing} already there (${e.enqueued} enqueued, ${e.skipped} skipped, ${e.missed} missed)`;
  return block([
    ['range', `${r.from} … ${r.to} (end excluded)`],
    ['fire times', r.fireTimes === 0 ? 0 : `${r.fireTimes}: ${r.firstFireAt} … ${r.lastFireAt}`],
    [r.dryRun ? 'would create' : 'created', r.created],
    ['left as they were', there],
  ]);
}

const action = (verb: 'pause' | 'resume'): Sub => ({
  usage: `${verb} <id>`,
  async run(api: ApiClient, args, values) {
    const s = await api.call<Schedule>(
      'POST',
      `/v1/schedules/${encodeURIComponent(requireArg(args, 0, 'schedule id'))}/${verb}`,
    );
    print(values.json === true, s, () => show(s));
    return 0;
  },
});

export const command = subcommands('schedule', 'manage schedules through the HTTP API', {
  add: {
    usage:
      'add --name N --spec SPEC (--target-url URL | --queue Q --kind K) [--payload JSON] [--priority N] [--max-attempts N] [--tz ZONE] [--tenant T] [--paused] | add --file schedule.json',
    options: {
      name: { type: 'string' },
      spec: { type: 'string' },
      'target-url': { type: 'string' },
      queue: { type: 'string' },
      kind: { type: 'string' },
      payload: { type: 'string' },
      priority: { type: 'string' },
      'max-attempts': { type: 'string' },
      tz: { type: 'string' },
      tenant: { type: 'string' },
      paused: { type: 'boolean' },
      file: { type: 'string' },
    },
    async run(api, _args, v) {
      const file = str(v, 'file');
      if (file !== undefined) {
        const s = await api.call<Schedule>(
          'POST',
          '/v1/schedules',
          parseJsonOption('file', await readFile(file, 'utf8')),
        );
        print(v.json === true, s, () => show(s));
        return 0;
      }
      const name = str(v, 'name');
      const spec = str(v, 'spec');
      if (name === undefined || spec === undefined) throw new UsageError('--name and --spec are required');
      const url = str(v, 'target-url');
      const body = {
        name,
        spec,
        timeZone: str(v, 'tz'),
        tenantId: str(v, 'tenant'),
        paused: v.paused === true ? true : undefined,
        target: {
          url,
          queue: str(v, 'queue'),
          kind: str(v, 'kind'),
          payload: parseJsonOption('payload', str(v, 'payload')),
          priority: parseIntOption('priority', str(v, 'priority')),
          maxAttempts: parseIntOption('max-attempts', str(v, 'max-attempts')),
        },
      };
      const s = await api.call<Schedule>('POST', '/v1/schedules', body);
      print(v.json === true, s, () => show(s));
      return 0;
    },
  },
  ls: {
    usage: 'ls [--tenant T] [--limit N]',
    options: { tenant: { type: 'string' }, limit: { type: 'string' } },
    async run(api, _args, v) {
      const q = new URLSearchParams();
      const tenant = str(v, 'tenant');
      if (tenant !== undefined) q.set('tenantId', tenant);
      const limit = parseIntOption('limit', str(v, 'limit'));
      if (limit !== undefined) q.set('limit', String(limit));
      const page = await api.call<{ items: Schedule[] }>('GET', `/v1/schedules?${q.toString()}`);
      print(v.json === true, page, () =>
        table(
          ['id', 'name', 'spec', 'target', 'paused', 'next fire'],
          page.items.map((s) => [
            s.id,
            s.name,
            s.spec,
            s.target.url ?? `${s.target.queue}/${s.target.kind}`,
            s.paused,
            s.nextFireAt,
          ]),
        ),
      );
      return 0;
    },
  },
  show: {
    usage: 'show <id>',
    async run(api, args, v) {
      const s = await api.call<Schedule>(
        'GET',
        `/v1/schedules/${encodeURIComponent(requireArg(args, 0, 'schedule id'))}`,
      );
      print(v.json === true, s, () => show(s));
      return 0;
    },
  },
  pause: action('pause'),
  resume: action('resume'),
  trigger: {
    usage: 'trigger <id>',
    async run(api, args, v) {
      const r = await api.call<{ jobId: number; firedAt: string }>(
        'POST',
        `/v1/schedules/${encodeURIComponent(requireArg(args, 0, 'schedule id'))}/trigger`,
      );
      print(v.json === true, r, () => `triggered: job ${r.jobId} at ${r.firedAt}\n`);
      return 0;
    },
  },
  backfill: {
    usage: 'backfill <id> --from ISO --to ISO [--dry-run]',
    help:
      "  --from ISO   the range's start: fire times at or after it (RFC 3339 with an offset)\n" +
      '  --to ISO     its end, exclusive; not after now\n' +
      '  --dry-run    only count what it would create and what is already there\n\n' +
      "Each of the schedule's fire times in the range that has no occurrence yet is enqueued now, with\n" +
      'its job; one that has (enqueued, skipped or missed) is left as it is. At most 10,000 per call.\n',
    options: { from: { type: 'string' }, to: { type: 'string' }, 'dry-run': { type: 'boolean' } },
    async run(api, args, v) {
      const id = requireArg(args, 0, 'schedule id');
      const from = str(v, 'from');
      const to = str(v, 'to');
      if (from === undefined || to === undefined) throw new UsageError('--from and --to are required');
      const r = await api.call<Backfill>('POST', `/v1/schedules/${encodeURIComponent(id)}/backfill`, {
        from,
        to,
        ...(v['dry-run'] === true ? { dryRun: true } : {}),
      });
      print(v.json === true, r, () => backfillText(r));
      return 0;
    },
  },
  rm: {
    usage: 'rm <id>',
    async run(api, args, v) {
      const id = requireArg(args, 0, 'schedule id');
      await api.call('DELETE', `/v1/schedules/${encodeURIComponent(id)}`);
      print(v.json === true, { deleted: id }, () => `deleted ${id}\n`);
      return 0;
    },
  },
  history: {
    usage: 'history <id> [--limit N] [--days N]',
    options: { limit: { type: 'string' }, days: { type: 'string' } },
    async run(api, args, v) {
      const days = parseIntOption('days', str(v, 'days'));
      if (days !== undefined)
        return dailyHistory(api, requireArg(args, 0, 'schedule id'), days, v.json === true);
      const limit = parseIntOption('limit', str(v, 'limit')) ?? 20;
      const page = await api.call<{
        items: {
          fireAt: string;
          state: string;
          source: string;
          lateMs: number;
          jobId: number | null;
          reason: string | null;
        }[];
      }>(
        'GET',
        `/v1/schedules/${encodeURIComponent(requireArg(args, 0, 'schedule id'))}/occurrences?limit=${limit}`,
      );
      print(v.json === true, page, () =>
        table(
          ['fire time', 'state', 'source', 'late', 'job', 'reason'],
          page.items.map((o) => [
            o.fireAt,
            o.state,
            o.source,
            // A backfilled occurrence's lateness is the age of the range asked for, not a delay.
            o.source === 'backfill' ? '-' : `${(o.lateMs / 1000).toFixed(1)} s`,
            o.jobId,
            o.reason,
          ]),
        ),
      );
      return 0;
    },
  },
});

/**
 * `history <id> --days N`: one row per UTC day, newest first, from the ledger and, for days retention
 * has pruned, from its rollup: the same counts and lateness either way.
 */
async function dailyHistory(api: ApiClient, id: string, days: number, json: boolean): Promise<number> {
  if (!(days >= 1 && days <= 3_650)) throw new UsageError(`--days: ${days} is not between 1 and 3650`);
  const from = new Date(Date.now() - days * 86_400_000).toISOString();
  const page = await api.call<{
    items: {
      at: string;
      scheduled: number;
      triggered: number;
      skipped: number;
      missed: number;
      late: number;
      lateMeanMs: number;
      lateMaxMs: number;
    }[];
  }>(
    'GET',
    `/v1/schedules/${encodeURIComponent(id)}/lateness?from=${encodeURIComponent(from)}&limit=${days + 1}`,
  );
  print(json, page, () =>
    table(
      ['day (UTC)', 'scheduled', 'triggered', 'skipped', 'missed', 'late > 2 s', 'mean late', 'max late'],
      page.items.map((d) => [
        d.at.slice(0, 10),
        d.scheduled,
        d.triggered,
        d.skipped,
        d.missed,
        d.late,
        `${(d.lateMeanMs / 1000).toFixed(1)} s`,
        `${(d.lateMaxMs / 1000).toFixed(1)} s`,
      ]),
    ),
  );
  return 0;
}
