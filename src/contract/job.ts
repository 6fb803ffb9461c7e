/**
 * A job to enqueue: the one schema the client, `POST /v1/jobs` and `tidemark job add` check, the
 * checks no schema can express (exactly one of kind and url, backoff bounds), and the row it
 * becomes. On the wire `runAt` is RFC 3339 text; the client also takes a Date.
 */
import { Type, type Static } from '@sinclair/typebox';
import { payloadJsonText, textProblem, type InputProblem } from '../input.ts';
import { PUSH_KIND, PUSH_QUEUE, pushPayload } from '../push/target.ts';
import type { JobInsert } from '../store/job-insert.ts';
import { compileChecker } from './check.ts';
import {
  DateTime,
  MaxAttempts,
  NonNegativeInt4,
  PositiveInt4,
  Priority,
  TenantId,
  targetFields,
} from './fields.ts';

export const MAX_JOBS_PER_REQUEST = 1000;
export const IDEMPOTENCY_KEY_MAX = 500;

export const JobInputSchema = Type.Object(
  {
    ...targetFields('Tidemark POSTs the payload here'),
    payload: Type.Optional(Type.Unknown()),
    priority: Type.Optional(Priority),
    runAt: Type.Optional(DateTime('not before this instant (default now)')),
    maxAttempts: Type.Optional(MaxAttempts),
    timeoutMs: Type.Optional(PositiveInt4('deadline per attempt')),
    heartbeatMs: Type.Optional(PositiveInt4('expected heartbeat interval; the lease is 3× this')),
    backoffBaseMs: Type.Optional(NonNegativeInt4('first retry delay')),
    backoffMaxMs: Type.Optional(NonNegativeInt4('longest retry delay')),
    idempotencyKey: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: IDEMPOTENCY_KEY_MAX,
        description:
          'unique per queue; the same key again returns the existing job. Default: job-<id>-<16 hex>, made from the new job id',
      }),
    ),
    tenantId: Type.Optional(TenantId),
  },
  { additionalProperties: false },
);
/** A job as the API receives it (runAt as text). */
export type JobBody = Static<typeof JobInputSchema>;

/**
 * What `client.jobs.enqueue` takes: the API's job body, with `runAt` as a Date or RFC 3339 text.
 * Give `kind` (a handler) or `url` (a push target: the payload is POSTed there). `queue` defaults
 * to `default` (`http` for a url), `tenantId` to `default`, `maxAttempts` to the queue's setting.
 */
export type EnqueueInput = Omit<JobBody, 'runAt'> & { runAt?: Date | string };

const jobChecker = compileChecker(JobInputSchema);

/** The problems a job's schema cannot express: exactly one of kind and url; backoff bounds. */
export function jobRuleProblems(job: JobBody, at: string): InputProblem[] {
  const problems: InputProblem[] = [];
  const field = (name: string): string => (at === '' ? name : `${at}.${name}`);
  if ((job.kind === undefined) === (job.url === undefined)) {
    problems.push({
      field: field('kind'),
      reason: 'give exactly one of kind (a handler) and url (a push target)',
    });
  }
  if (
    job.backoffBaseMs !== undefined &&
    job.backoffMaxMs !== undefined &&
    job.backoffMaxMs < job.backoffBaseMs
  ) {
    problems.push({ field: field('backoffMaxMs'), reason: 'must be at least backoffBaseMs' });
  }
  return problems;
}

/** The row a valid job becomes, in `tenantId` (already resolved by the caller). */
export function jobInsertOf(job: JobBody, tenantId: string, payloadJson?: string): JobInsert {
  const push = job.url !== undefined;
  return {
    queue: job.queue ?? (push ? PUSH_QUEUE : 'default'),
    kind: push ? PUSH_KIND : (job.kind ?? ''),
    tenantId,
    payload: push ? pushPayload(job.url ?? '', job.payload) : (job.payload ?? {}),
    payloadJson: push ? undefined : payloadJson,
    priority: job.priority ?? 0,
    runAt: job.runAt === undefined ? null : new Date(job.runAt),
    maxAttempts: job.maxAttempts ?? null,
    timeoutMs: job.timeoutMs ?? null,
    heartbeatMs: job.heartbeatMs ?? null,
    backoffBaseMs: job.backoffBaseMs ?? null,
    backoffMaxMs: job.backoffMaxMs ?? null,
    idempotencyKey: job.idempotencyKey ?? null,
  };
}

/**
 * The client's check of one job at `at` ('' alone, `jobs.3` in a batch): the API's schema and
 * rules, with the same paths and messages, plus the text checks the API's JSON parser makes (NUL,
 * unpaired surrogates, nesting), done on the payload's JSON text, which the insert sends as is.
 * Returns the row, or the problems.
 */
export function jobFromClient(input: EnqueueInput, at: string): JobInsert | InputProblem[] {
  const field = (name: string): string => (at === '' ? name : `${at}.${name}`);
  let wire: unknown = input;
  if (typeof input === 'object' && input !== null && input.runAt instanceof Date) {
    if (Number.isNaN(input.runAt.getTime()))
      return [{ field: field('runAt'), reason: 'must be a valid Date' }];
    wire = { ...input, runAt: input.runAt.toISOString() };
  }
  if (!jobChecker.check(wire)) return jobChecker.problems(wire, at);
  const problems = jobRuleProblems(wire, at);
  for (const name of ['kind', 'idempotencyKey', 'url'] as const) {
    const value = wire[name];
    const reason = value === undefined ? undefined : textProblem(value);
    if (reason !== undefined) problems.push({ field: field(name), reason });
  }
  const payload = payloadJsonText(wire.payload ?? {});
  if ('problem' in payload) return [...problems, { field: field('payload'), reason: payload.problem }];
  if (problems.length > 0) return problems;
  return jobInsertOf(wire, wire.tenantId ?? 'default', payload.json);
}
