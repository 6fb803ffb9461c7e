/** `tidemark job add|ls|show|cancel|retry` over the HTTP API. */
import { readFile } from 'node:fs/promises';
import { UsageError } from '../usage-error.ts';
import { parseIntOption, parseJsonOption, progress, requireArg, type ApiClient } from './api-client.ts';
import { block, print, table } from './output.ts';
import { str, subcommands } from './subcommands.ts';

interface Job {
  id: number;
  queue: string;
  kind: string;
  tenantId: string;
  state: string;
  attempt: number;
  maxAttempts: number;
  runAt: string;
  createdAt: string;
  lastError: string | null;
  progress: unknown;
  idempotencyKey: string;
  payload: unknown;
  attempts?: {
    attempt: number;
    worker: string;
    outcome: string | null;
    durationMs: number | null;
    error: string | null;
  }[];
}

interface Enqueued {
  id: number;
  created: boolean;
}

// The API takes up to 1,000 jobs per request; bigger files go in chunks of that size.
const CHUNK = 1000;

function showJob(j: Job): string {
  return (
    block([
      ['id', j.id],
      ['queue', j.queue],
      ['kind', j.kind],
      ['tenant', j.tenantId],
      ['state', j.state],
      ['attempt', `${j.attempt}/${j.maxAttempts}`],
      ['run at', j.runAt],
      ['key', j.idempotencyKey],
      ['progress', j.progress as object | null],
      ['last error', j.lastError],
    ]) +
    (j.attempts === undefined || j.attempts.length === 0
      ? ''
      : `\n${table(
          ['attempt', 'worker', 'outcome', 'duration', 'error'],
          j.attempts.map((a) => [
            a.attempt,
            a.worker,
            a.outcome,
            a.durationMs === null ? null : `${Math.round(a.durationMs)} ms`,
            a.error,
          ]),
        )}`)
  );
}

async function enqueueOne(api: ApiClient, job: unknown, json: boolean): Promise<number> {
  const r = await api.call<Enqueued>('POST', '/v1/jobs', job);
  print(json, r, () => `${r.created ? 'enqueued' : 'already enqueued'}: job ${r.id}\n`);
  return 0;
}

export const command = subcommands('job', 'enqueue and manage jobs through the HTTP API', {
  add: {
    usage:
      'add (--queue Q --kind K | --target-url URL) [--payload JSON] [--key K] [--run-at ISO] [--priority N] [--max-attempts N] [--tenant T] | add --file job.json (one job, or an array of jobs)',
    options: {
      queue: { type: 'string' },
      kind: { type: 'string' },
      'target-url': { type: 'string' },
      payload: { type: 'string' },
      key: { type: 'string' },
      'run-at': { type: 'string' },
      priority: { type: 'string' },
      'max-attempts': { type: 'string' },
      tenant: { type: 'string' },
      file: { type: 'string' },
    },
    async run(api, _args, v) {
      const file = str(v, 'file');
      if (file === undefined) {
        const job = {
          queue: str(v, 'queue'),
          kind: str(v, 'kind'),
          url: str(v, 'target-url'),
          payload: parseJsonOption('payload', str(v, 'payload')),
          idempotencyKey: str(v, 'key'),
          runAt: str(v, 'run-at'),
          priority: parseIntOption('priority', str(v, 'priority')),
          maxAttempts: parseIntOption('max-attempts', str(v, 'max-attempts')),
          tenantId: str(v, 'tenant'),
        };
        return enqueueOne(api, job, v.json === true);
      }
      const jobs = parseJsonOption('file', await readFile(file, 'utf8'));
      // One job is sent as the body itself, so the API's errors name its fields as `body.<field>`.
      if (typeof jobs === 'object' && jobs !== null && !Array.isArray(jobs))
        return enqueueOne(api, jobs, v.json === true);
      if (!Array.isArray(jobs))
        throw new UsageError(`--file: ${file} must hold a JSON object (one job) or an array of jobs`);
      const results: Enqueued[] = [];
      for (let i = 0; i < jobs.length; i += CHUNK) {
        const r = await api.call<{ items: Enqueued[] }>('POST', '/v1/jobs', {
          jobs: jobs.slice(i, i + CHUNK),
        });
        results.push(...r.items);
        progress('enqueued', results.length, jobs.length);
      }
      const created = results.filter((r) => r.created).length;
      print(
        v.json === true,
        { items: results },
        () => `${created} enqueued, ${results.length - created} already there\n`,
      );
      return 0;
    },
  },
  ls: {
    usage:
      'ls [--queue Q] [--state S] [--tenant T] [--kind K] [--payload FILTER] [--from ISO] [--to ISO] [--before ID] [--limit N]',
    options: {
      queue: { type: 'string' },
      state: { type: 'string' },
      tenant: { type: 'string' },
      kind: { type: 'string' },
      payload: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      before: { type: 'string' },
      limit: { type: 'string' },
    },
    async run(api, _args, v) {
      const q = new URLSearchParams();
      const flags: string[] = [];
      for (const [opt, param] of [
        ['queue', 'queue'],
        ['state', 'state'],
        ['tenant', 'tenantId'],
        ['kind', 'kind'],
        ['payload', 'payload'],
        ['from', 'createdFrom'],
        ['to', 'createdTo'],
      ] as const) {
        const value = str(v, opt);
        if (value === undefined) continue;
        q.set(param, value);
        flags.push(`--${opt} ${/^[\w.:@/+-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`}`);
      }
      const before = parseIntOption('before', str(v, 'before'));
      if (before !== undefined) q.set('before', String(before));
      const limit = parseIntOption('limit', str(v, 'limit')) ?? 50;
      q.set('limit', String(limit));
      const page = await api.call<{ items: Job[]; next: number | null; cutShort?: boolean }>(
        'GET',
        `/v1/jobs?${q.toString()}`,
      );
      print(v.json === true, page, () => {
        const rows = table(
          ['id', 'queue', 'kind', 'tenant', 'state', 'attempt', 'run at', 'last error'],
          page.items.map((j) => [
            j.id,
            j.queue,
            j.kind,
            j.tenantId,
            j.state,
            `${j.attempt}/${j.maxAttempts}`,
            j.runAt,
            j.lastError,
          ]),
        );
        if (page.next === null) return rows;
        const short =
          page.cutShort === true
            ? 'the search read its 10,000 jobs for this page before the page filled; more may match further back\n'
            : '';
        return `${rows}${short}next page: tidemark job ls ${[...flags, `--limit ${limit}`, `--before ${page.next}`].join(' ')}\n`;
      });
      return 0;
    },
  },
  show: {
    usage: 'show <id>',
    async run(api, args, v) {
      const j = await api.call<Job>('GET', `/v1/jobs/${encodeURIComponent(requireArg(args, 0, 'job id'))}`);
      print(v.json === true, j, () => showJob(j));
      return 0;
    },
  },
  cancel: {
    usage: 'cancel <id>',
    async run(api, args, v) {
      const r = await api.call<{ previousState: string; job: Job }>(
        'POST',
        `/v1/jobs/${encodeURIComponent(requireArg(args, 0, 'job id'))}/cancel`,
      );
      print(v.json === true, r, () =>
        r.previousState === 'running'
          ? `job ${r.job.id}: cancel requested; the worker running it stops it\n`
          : `job ${r.job.id}: ${r.previousState} → ${r.job.state}\n`,
      );
      return 0;
    },
  },
  retry: {
    usage: 'retry <id>',
    async run(api, args, v) {
      const j = await api.call<Job>(
        'POST',
        `/v1/jobs/${encodeURIComponent(requireArg(args, 0, 'job id'))}/retry`,
      );
      print(v.json === true, j, () => `job ${j.id}: ${j.state} (attempts ${j.attempt}/${j.maxAttempts})\n`);
      return 0;
    },
  },
});
