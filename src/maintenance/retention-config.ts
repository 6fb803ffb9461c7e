/**
 * Retention settings: how long finished history is kept, with per-queue and per-tenant overrides.
 * Checked whole before anything runs: a bad value is refused with the field's path and the reason.
 *
 * A duration is milliseconds (a number) or text: `7d`, `12h`, `30m`, `45s`, or `forever`. A job's
 * retention is its queue's override for its state, else its tenant's, else the default; an
 * occurrence's goes by its schedule's queue and tenant; a workflow's by its tenant, with a
 * succeeded workflow under `succeeded`, a failed one under `dead` and a cancelled one under
 * `cancelled`.
 */
import { ConfigError } from '../errors.ts';
import type { RetentionPolicy, RetentionSeconds } from '../store/retention.ts';

export type RetentionDuration = number | string;

export interface RetentionOverride {
  succeeded?: RetentionDuration;
  cancelled?: RetentionDuration;
  dead?: RetentionDuration;
  occurrences?: RetentionDuration;
}

export interface RetentionConfig extends RetentionOverride {
  /** false: nothing is pruned. Default true. */
  enabled?: boolean;
  queues?: Record<string, RetentionOverride>;
  tenants?: Record<string, RetentionOverride>;
  /** How long a stopped or lost worker stays in the registry (GET /v1/workers). Default 1 day. */
  workers?: RetentionDuration;
  /**
   * How long the lateness rollups of pruned occurrences are kept (per minute and per schedule and
   * day). Default 400 days; no shorter than any `occurrences` setting.
   */
  rollups?: RetentionDuration;
  /** How long the queues' audit trail (pauses, resumes, edits) is kept. Default 400 days. */
  audit?: RetentionDuration;
}

const DAY_S = 86_400;

/**
 * A week of successes is enough to answer "did it run" for any recent incident; failures (dead,
 * cancelled) and the occurrence ledger are what someone investigates weeks later, so a month.
 */
export const RETENTION_DEFAULTS: Readonly<RetentionSeconds> = {
  succeeded: 7 * DAY_S,
  cancelled: 30 * DAY_S,
  dead: 30 * DAY_S,
  occurrences: 30 * DAY_S,
};

/** A day of stopped and lost workers: enough to see what ran overnight, no more than a fleet's churn. */
export const WORKER_RETENTION_DEFAULT_S = DAY_S;

/**
 * Lateness history and the queues' audit trail: a year and a month, so this month can be read
 * beside the same month a year ago. At 30,000 schedules the per-schedule rollup holds 12 million rows.
 */
export const ROLLUP_RETENTION_DEFAULT_S = 400 * DAY_S;
export const AUDIT_RETENTION_DEFAULT_S = 400 * DAY_S;

/**
 * Shortest retention accepted: a finished job is still read right after it ends (its enqueuer polls
 * it, a dashboard shows it, buffer_one's successor checks it), so nothing goes within a minute.
 */
export const MIN_RETENTION_S = 60;

const KEYS = ['succeeded', 'cancelled', 'dead', 'occurrences'] as const;
type Key = (typeof KEYS)[number];

/** A retention setting that cannot be used: names it and says why. */
export class RetentionConfigError extends ConfigError {
  override name = 'RetentionConfigError';
  constructor(
    readonly field: string,
    reason: string,
  ) {
    super(`${field}: ${reason}`);
  }
}

const UNIT_S: Record<string, number> = { s: 1, m: 60, h: 3_600, d: DAY_S, w: 7 * DAY_S };

/** Seconds, or -1 for forever. */
function seconds(field: string, value: unknown): number {
  let s: number;
  if (typeof value === 'number') {
    if (!Number.isFinite(value))
      throw new RetentionConfigError(field, `${value} is not a number of milliseconds`);
    s = value / 1000;
  } else if (typeof value === 'string') {
    const text = value.trim();
    if (text === 'forever') return -1;
    const match = /^(\d+(?:\.\d+)?)(s|m|h|d|w)$/.exec(text);
    if (match === null) {
      throw new RetentionConfigError(
        field,
        `'${value}' is not a duration (a number of milliseconds, or e.g. 45s, 30m, 12h, 7d, 2w, forever)`,
      );
    }
    s = Number(match[1]) * (UNIT_S[match[2] ?? 's'] ?? 1);
  } else {
    throw new RetentionConfigError(
      field,
      `expected a duration (number of ms or text such as 7d), got ${typeof value}`,
    );
  }
  if (s < MIN_RETENTION_S) {
    throw new RetentionConfigError(
      field,
      `${String(value)} is shorter than the minimum of ${MIN_RETENTION_S} s`,
    );
  }
  return s;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function override(field: string, value: unknown, allowed: readonly string[]): Partial<RetentionSeconds> {
  if (!isRecord(value)) throw new RetentionConfigError(field, 'expected an object of durations');
  const out: Partial<Record<Key, number>> = {};
  for (const [k, v] of Object.entries(value)) {
    if (!allowed.includes(k)) {
      throw new RetentionConfigError(
        `${field}.${k}`,
        `unknown field (expected one of ${allowed.join(', ')})`,
      );
    }
    if (v !== undefined) out[k as Key] = seconds(`${field}.${k}`, v);
  }
  return out;
}

function overrides(
  field: string,
  value: unknown,
  namePattern: RegExp,
  what: string,
): Record<string, Partial<RetentionSeconds>> {
  if (value === undefined) return {};
  if (!isRecord(value)) throw new RetentionConfigError(field, `expected an object keyed by ${what} name`);
  const out: Record<string, Partial<RetentionSeconds>> = {};
  for (const [name, o] of Object.entries(value)) {
    if (!namePattern.test(name))
      throw new RetentionConfigError(`${field}.${name}`, `not a valid ${what} name`);
    out[name] = override(`${field}.${name}`, o, KEYS);
  }
  return out;
}

/** What Maintenance runs: null when retention is switched off. */
export interface RetentionPlan {
  policy: RetentionPolicy;
  /**
   * Shortest retention of succeeded, dead and cancelled jobs anywhere in the policy (seconds); null
   * when every such job is kept forever.
   */
  jobHorizonS: { succeeded: number | null; dead: number | null; cancelled: number | null };
  /**
   * The default retention of succeeded jobs when no override keeps one longer or forever: past it a
   * whole slice of them is due (store/job-slice-drop.ts). Null: every slice goes row by row.
   */
  sliceDueS: number | null;
  occurrenceHorizonS: number | null;
  /**
   * The default occurrence retention when no override keeps an occurrence longer or forever: past
   * it a whole slice of the ledger is due (store/occurrence-slices.ts). Null: every row goes alone.
   */
  occurrenceSliceDueS: number | null;
  workflowHorizonS: number | null;
  /** Stopped and lost workers' registry rows; null: kept forever. */
  workersS: number | null;
  /** occurrence_minutes and occurrence_days rows; null: kept forever. */
  rollupsS: number | null;
  /** queue_changes rows; null: kept forever. */
  auditS: number | null;
}

function shortest(policy: RetentionPolicy, keys: readonly Key[], withQueues: boolean): number | null {
  const values: number[] = [];
  const sources = [policy.d, ...Object.values(policy.t), ...(withQueues ? Object.values(policy.q) : [])];
  for (const source of sources) {
    for (const k of keys) {
      const v = source[k];
      if (v !== undefined && v >= 0) values.push(v);
    }
  }
  return values.length === 0 ? null : Math.min(...values);
}

function sliceDue(policy: RetentionPolicy, key: 'succeeded' | 'occurrences'): number | null {
  const d = policy.d[key];
  const overrides = [...Object.values(policy.q), ...Object.values(policy.t)].map((o) => o[key]);
  return d >= 0 && overrides.every((v) => v === undefined || (v >= 0 && v <= d)) ? d : null;
}

/**
 * Seconds of fire time per slice of the occurrence ledger the role attaches: a day, or a thirtieth of
 * a longer retention in whole days, so ~31 slices hold the retained ledger whatever its period
 * (a year in daily slices would be 366 partitions, each planned and probed by every read that can
 * not prune by fire time); 30 days when no slice is ever dropped whole (retention off, or an
 * override keeping occurrences longer than the default), 12 partitions a year.
 */
export function occurrenceSliceSpanS(plan: RetentionPlan | null): number {
  const due = plan?.occurrenceSliceDueS ?? null;
  if (due === null) return 30 * DAY_S;
  return Math.max(1, Math.floor(due / (30 * DAY_S))) * DAY_S;
}

/** Seconds as the settings write them: whole days as `7d`, else seconds. */
function duration(s: number): string {
  return s % DAY_S === 0 ? `${s / DAY_S}d` : `${s}s`;
}

/** Longest finite retention of `key` anywhere in the policy; null when it is forever everywhere. */
function longestFinite(policy: RetentionPolicy, key: Key): number | null {
  const values = [policy.d, ...Object.values(policy.t), ...Object.values(policy.q)]
    .map((source) => source[key])
    .filter((v): v is number => v !== undefined && v >= 0);
  return values.length === 0 ? null : Math.max(...values);
}

/**
 * Checks a retention configuration (from code or a JSON file) and makes the plan Maintenance runs.
 * `field` prefixes error paths (`retention` by default). Throws RetentionConfigError.
 */
export function retentionPlan(config: unknown = {}, field = 'retention'): RetentionPlan | null {
  if (!isRecord(config)) throw new RetentionConfigError(field, 'expected an object');
  const known = ['enabled', 'queues', 'tenants', 'workers', 'rollups', 'audit', ...KEYS];
  for (const k of Object.keys(config)) {
    if (!known.includes(k)) {
      throw new RetentionConfigError(`${field}.${k}`, `unknown field (expected one of ${known.join(', ')})`);
    }
  }
  const enabled = config.enabled ?? true;
  if (typeof enabled !== 'boolean')
    throw new RetentionConfigError(`${field}.enabled`, 'expected true or false');
  const defaults: RetentionSeconds = { ...RETENTION_DEFAULTS };
  for (const k of KEYS) {
    if (config[k] !== undefined) defaults[k] = seconds(`${field}.${k}`, config[k]);
  }
  const policy: RetentionPolicy = {
    d: defaults,
    // The names as 0001's CHECKs on queues.name and tenants.id have them.
    q: overrides(`${field}.queues`, config.queues, /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/, 'queue'),
    t: overrides(`${field}.tenants`, config.tenants, /^[a-z0-9][a-z0-9_-]{0,62}$/, 'tenant'),
  };
  const optional = (key: 'workers' | 'rollups' | 'audit', fallback: number): number =>
    config[key] === undefined ? fallback : seconds(`${field}.${key}`, config[key]);
  const workersS = optional('workers', WORKER_RETENTION_DEFAULT_S);
  const rollupsS = optional('rollups', ROLLUP_RETENTION_DEFAULT_S);
  const auditS = optional('audit', AUDIT_RETENTION_DEFAULT_S);
  // A rollup row is written when its occurrences are pruned: a shorter rollup retention would
  // delete the lateness history as soon as it is made.
  const ledger = longestFinite(policy, 'occurrences');
  if (rollupsS >= 0 && ledger !== null && rollupsS < ledger) {
    throw new RetentionConfigError(
      `${field}.rollups`,
      `${duration(rollupsS)} is shorter than the longest occurrences setting (${duration(ledger)}): the lateness of pruned occurrences would be deleted as soon as it is summed`,
    );
  }
  if (!enabled) return null;
  return {
    workersS: workersS < 0 ? null : workersS,
    rollupsS: rollupsS < 0 ? null : rollupsS,
    auditS: auditS < 0 ? null : auditS,
    policy,
    jobHorizonS: {
      succeeded: shortest(policy, ['succeeded'], true),
      dead: shortest(policy, ['dead'], true),
      cancelled: shortest(policy, ['cancelled'], true),
    },
    sliceDueS: sliceDue(policy, 'succeeded'),
    occurrenceHorizonS: shortest(policy, ['occurrences'], true),
    occurrenceSliceDueS: sliceDue(policy, 'occurrences'),
    // Workflows have no queue: only defaults and tenant overrides apply.
    workflowHorizonS: shortest(policy, ['succeeded', 'cancelled', 'dead'], false),
  };
}
