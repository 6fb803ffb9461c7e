/**
 * The idempotency key of a job enqueued without one: `job-<job id>-<16 hex digits>`. The statement
 * that inserts the job draws its id and joins it to a random part made here (the COPY path knows the
 * ids first and makes the whole key here).
 *
 * Unique within a database by the id, and across databases by the 64 random bits: a handler's own
 * dedupe table may serve two Tidemark databases (a new cluster's ids start at 1 again), where `job-1`
 * alone would say that an effect had already happened. Being unique by construction, these keys stay
 * out of the unique key index (migration 0018), which every claim and completion would otherwise
 * write to; a generated key sent back as a caller's key finds its job through the id in it.
 */
import { randomFillSync } from 'node:crypto';

/** Random bytes fetched 1,024 keys' worth at a time: one getrandom call per key costs more than the key. */
const POOL_BYTES = 8 * 1024;
const pool = Buffer.alloc(POOL_BYTES);
let offset = POOL_BYTES;

const GENERATED = /^job-([1-9][0-9]{0,15})-[0-9a-f]{16}$/;

/** The random part of a new generated key: 16 lowercase hex digits. */
export function newKeySuffix(): string {
  if (offset + 8 > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  offset += 8;
  return pool.toString('hex', offset - 8, offset);
}

export function generatedKey(jobId: number, suffix: string): string {
  return `job-${jobId}-${suffix}`;
}

/** The same key made in SQL, from expressions for the id and the random part. */
export function generatedKeySql(jobId: string, suffix: string): string {
  return `'job-' || ${jobId} || '-' || ${suffix}`;
}

/** The job id in a key of the generated form, else undefined (any other key is the caller's own). */
export function generatedKeyJobId(key: string): number | undefined {
  return idIn(GENERATED, key);
}

/**
 * The key of a workflow node's job, `workflow:<workflow id>:<node row id>:<run>`: stable across the
 * job's own retries, new when a resume runs the node again. Unique by construction too (one job per
 * node and run), so it stays out of the unique key index like a generated key; sent back as a
 * caller's key, it finds the node's current job through the node id in it.
 */
export function workflowJobKeySql(workflowId: string, nodeId: string, run: string): string {
  return `'workflow:' || ${workflowId} || ':' || ${nodeId} || ':' || ${run}`;
}

/** `workflow:<workflow id>:<node id>:<run>`; the workflow id may hold colons itself. */
const WORKFLOW = /^workflow:(.+):([1-9][0-9]{0,15}):[1-9][0-9]{0,9}$/;

/**
 * The workflow a job may be a node of, by its key: every node's job has it; a caller's own key of
 * that form as well, which only sends its completion the longer way (worker/completer.ts).
 */
export function workflowJobKeyWorkflowId(key: string): string | undefined {
  return WORKFLOW.exec(key)?.[1];
}

/** The workflow node id in a key of a workflow node's job, else undefined. */
export function workflowJobKeyNodeId(key: string): number | undefined {
  return idIn(WORKFLOW, key, 2);
}

/**
 * The keys of a schedule's jobs, `occurrence:<schedule>:<fire time>` (scheduler/plan.ts) and
 * `trigger:<schedule>:<uuid>` (a manual trigger): unique by construction as well, by the ledger's
 * unique (schedule, fire time) and by the random uuid, so they stay out of job_keys; sent back as a
 * caller's key, they find their job through the ledger.
 */
const OCCURRENCE = /^occurrence:([0-9a-f-]{36}):(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)$/;
const TRIGGER = /^trigger:([0-9a-f-]{36}):[0-9a-f-]{36}$/;

/** The schedule (and, for a scheduled occurrence, the fire time) in a schedule job's key, else undefined. */
export function scheduleJobKeyParts(key: string): { scheduleId: string; fireAt: Date | null } | undefined {
  const occurrence = OCCURRENCE.exec(key);
  if (occurrence?.[1] !== undefined && occurrence[2] !== undefined) {
    const fireAt = new Date(occurrence[2]);
    return Number.isNaN(fireAt.getTime()) ? undefined : { scheduleId: occurrence[1], fireAt };
  }
  const trigger = TRIGGER.exec(key);
  return trigger?.[1] === undefined ? undefined : { scheduleId: trigger[1], fireAt: null };
}

/** The row id `form` captures first in `key`, if the key has that form and the id is exact in a double. */
function idIn(form: RegExp, key: string, group = 1): number | undefined {
  const match = form.exec(key);
  if (match === null) return undefined;
  const id = Number(match[group]);
  return Number.isSafeInteger(id) ? id : undefined;
}

/** The random part of a generated key. */
export function generatedKeySuffix(key: string): string {
  return key.slice(-16);
}
