/**
 * Checks enqueue input before anything is written; every error names the field and the reason, as
 * `jobs[3].queue: …` for a batch. Mirrors the schema's CHECKs so bad input never reaches SQL.
 */
import { jsonTextProblem, textProblem } from '../input.ts';
import type { JobInsert } from '../store/job-insert.ts';
import { JobValidationError } from './errors.ts';

export interface EnqueueInput {
  queue: string;
  kind: string;
  payload?: unknown;
  /** Default 'default'. */
  tenantId?: string;
  /** Higher runs first. Default 0. */
  priority?: number;
  /** Default: now. */
  runAt?: Date;
  /** First try plus retries. Default: the queue's, else 4. */
  maxAttempts?: number;
  timeoutMs?: number;
  heartbeatMs?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /**
   * Default: `job-<id>-<16 hex>`, made from the new job's id (no deduplication). A key already in
   * the queue returns that job, a generated one sent back included.
   */
  idempotencyKey?: string;
}

const QUEUE_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const TENANT_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const INT32_MAX = 2_147_483_647;

function fail(field: string, reason: string): never {
  throw new JobValidationError(`${field}: ${reason}`);
}

/**
 * `name` within the job at `prefix` ('' for a single job, `jobs[3]` in a batch). Made only when a
 * check fails: a closure per job made it eagerly, which was most of validation's time for 50,000 jobs.
 */
function at(prefix: string, name: string): string {
  return prefix === '' ? name : `${prefix}.${name}`;
}

function optionalInt(value: unknown, prefix: string, name: string, min: number): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > INT32_MAX) {
    fail(at(prefix, name), `must be an integer from ${min} to ${INT32_MAX}, got ${JSON.stringify(value)}`);
  }
  return value;
}

export function validateEnqueue(input: EnqueueInput, prefix: string): JobInsert {
  if (typeof input !== 'object' || input === null) fail(prefix === '' ? 'job' : prefix, 'must be an object');
  if (typeof input.queue !== 'string' || !QUEUE_RE.test(input.queue)) {
    fail(
      at(prefix, 'queue'),
      `must be 1-128 of A-Z a-z 0-9 _ . : - starting with a letter or digit, got ${JSON.stringify(input.queue)}`,
    );
  }
  if (typeof input.kind !== 'string' || input.kind.length === 0 || input.kind.length > 200) {
    fail(
      at(prefix, 'kind'),
      `must be a non-empty string of at most 200 characters, got ${JSON.stringify(input.kind)}`,
    );
  }
  const kindProblem = textProblem(input.kind);
  if (kindProblem !== undefined) fail(at(prefix, 'kind'), kindProblem);
  const tenantId = input.tenantId ?? 'default';
  if (typeof tenantId !== 'string' || !TENANT_RE.test(tenantId)) {
    fail(
      at(prefix, 'tenantId'),
      `must be 1-63 of a-z 0-9 _ - starting with a letter or digit, got ${JSON.stringify(tenantId)}`,
    );
  }
  const payload: unknown = input.payload ?? {};
  // Serialised here, once: the text is what the insert sends, so a payload that can not be written
  // fails validation and the statement never reparses or restringifies it.
  let payloadJson: string | undefined;
  try {
    payloadJson = JSON.stringify(payload);
  } catch (error) {
    throw new JobValidationError(`${at(prefix, 'payload')}: must be JSON-serialisable`, { cause: error });
  }
  if (payloadJson === undefined) fail(at(prefix, 'payload'), 'must be JSON-serialisable');
  const payloadProblem = jsonTextProblem(payloadJson);
  if (payloadProblem !== undefined) fail(at(prefix, 'payload'), payloadProblem);
  const priority = optionalInt(input.priority, prefix, 'priority', -INT32_MAX) ?? 0;
  let runAt: Date | null = null;
  if (input.runAt !== undefined) {
    if (!(input.runAt instanceof Date) || Number.isNaN(input.runAt.getTime())) {
      fail(at(prefix, 'runAt'), `must be a valid Date, got ${String(input.runAt)}`);
    }
    runAt = input.runAt;
  }
  const key = input.idempotencyKey ?? null;
  if (key !== null && (typeof key !== 'string' || key.length === 0 || key.length > 512)) {
    fail(at(prefix, 'idempotencyKey'), 'must be a non-empty string of at most 512 characters');
  }
  const keyProblem = key === null ? undefined : textProblem(key);
  if (keyProblem !== undefined) fail(at(prefix, 'idempotencyKey'), keyProblem);
  const backoffBaseMs = optionalInt(input.backoffBaseMs, prefix, 'backoffBaseMs', 0);
  const backoffMaxMs = optionalInt(input.backoffMaxMs, prefix, 'backoffMaxMs', 0);
  if (backoffBaseMs !== null && backoffMaxMs !== null && backoffMaxMs < backoffBaseMs) {
    fail(
      at(prefix, 'backoffMaxMs'),
      `must be at least backoffBaseMs (${backoffBaseMs}), got ${backoffMaxMs}`,
    );
  }
  return {
    queue: input.queue,
    kind: input.kind,
    tenantId,
    payload,
    payloadJson,
    priority,
    runAt,
    maxAttempts: optionalInt(input.maxAttempts, prefix, 'maxAttempts', 1),
    timeoutMs: optionalInt(input.timeoutMs, prefix, 'timeoutMs', 1),
    heartbeatMs: optionalInt(input.heartbeatMs, prefix, 'heartbeatMs', 1),
    backoffBaseMs,
    backoffMaxMs,
    idempotencyKey: key,
  };
}
