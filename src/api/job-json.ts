/** The JSON shape of a job (and its attempts) in every API response. */
import { Type, type Static } from '@sinclair/typebox';
import type { JobAttemptRow } from '../store/job-attempts.ts';
import { JOB_SCAN_LIMIT, type JobSearchPage } from '../store/job-search.ts';
import type { JobRow } from '../store/jobs.ts';

const DateTime = Type.String({ format: 'date-time' });
const NullableDateTime = Type.Union([DateTime, Type.Null()]);
const NullableInt = Type.Union([Type.Integer(), Type.Null()]);

export const JobSchema = Type.Object({
  id: Type.Integer(),
  queue: Type.String(),
  kind: Type.String(),
  tenantId: Type.String(),
  payload: Type.Unknown(),
  priority: Type.Integer(),
  state: Type.String(),
  runAt: DateTime,
  attempt: Type.Integer(),
  maxAttempts: Type.Integer(),
  timeoutMs: NullableInt,
  heartbeatMs: NullableInt,
  idempotencyKey: Type.String(),
  leaseOwner: Type.Union([Type.String(), Type.Null()]),
  leaseExpiresAt: NullableDateTime,
  progress: Type.Unknown(),
  heartbeatAt: NullableDateTime,
  lastError: Type.Union([Type.String(), Type.Null()]),
  scheduleId: Type.Union([Type.String(), Type.Null()]),
  cancelRequestedAt: NullableDateTime,
  createdAt: DateTime,
  startedAt: NullableDateTime,
  finishedAt: NullableDateTime,
});

/** One page of jobs, newest first; `next` is the id to pass as `before` for the page after. */
export const JobPage = Type.Object({
  items: Type.Array(JobSchema),
  next: NullableInt,
  cutShort: Type.Boolean({
    description: `true: a kind or payload filter read ${JOB_SCAN_LIMIT.toLocaleString('en')} jobs without filling the page; \`next\` goes on below the last one read`,
  }),
});

export function jobPage(page: JobSearchPage): Static<typeof JobPage> {
  return { items: page.rows.map(jobJson), next: page.next, cutShort: page.cutShort };
}

export const AttemptSchema = Type.Object({
  attempt: Type.Integer(),
  worker: Type.String(),
  startedAt: DateTime,
  finishedAt: NullableDateTime,
  durationMs: Type.Union([Type.Number(), Type.Null()]),
  outcome: Type.Union([Type.String(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
});

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

export function jobJson(row: JobRow) {
  return {
    id: row.id,
    queue: row.queue,
    kind: row.kind,
    tenantId: row.tenantId,
    payload: row.payload,
    priority: row.priority,
    state: row.state,
    runAt: row.runAt.toISOString(),
    attempt: row.attempt,
    maxAttempts: row.maxAttempts,
    timeoutMs: row.timeoutMs,
    heartbeatMs: row.heartbeatMs,
    idempotencyKey: row.idempotencyKey,
    leaseOwner: row.leaseOwner,
    leaseExpiresAt: iso(row.leaseExpiresAt),
    progress: row.progress,
    heartbeatAt: iso(row.heartbeatAt),
    lastError: row.lastError,
    scheduleId: row.scheduleId,
    cancelRequestedAt: iso(row.cancelRequestedAt),
    createdAt: row.createdAt.toISOString(),
    startedAt: iso(row.startedAt),
    finishedAt: iso(row.finishedAt),
  };
}

export function attemptJson(row: JobAttemptRow) {
  return {
    attempt: row.attempt,
    worker: row.worker,
    startedAt: row.startedAt.toISOString(),
    finishedAt: iso(row.finishedAt),
    durationMs: row.durationMs,
    outcome: row.outcome,
    error: row.error,
  };
}
