/**
 * A queue's cluster-wide settings: one shape, checked by one schema, wherever they are written (the
 * worker's config file, `client.queues.update`, `PATCH /v1/queues/:name`, `tidemark queue set`).
 *
 *   { "maxRunning": 100,          cluster-wide cap on running jobs; null: none (default)
 *     "maxAttempts": 4,           attempts before the dead letter (default 4)
 *     "backoffBaseMs": 1000,      first retry delay; doubles each attempt, with jitter (default 1000)
 *     "backoffMaxMs": 3600000,    longest retry delay, at least backoffBaseMs (default 3600000)
 *     "timeoutMs": 30000 }        deadline per attempt unless the job sets its own; null: none (default)
 *
 * Every field is optional: one left out keeps its current value. Unknown fields are refused.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { QueueSettings } from '../store/queues.ts';
import { ValidationError } from '../errors.ts';

const INT4_MAX = 2_147_483_647;
const int = (minimum: number, description: string) =>
  Type.Integer({ minimum, maximum: INT4_MAX, description });

export const QueueSettingsSchema = Type.Object(
  {
    maxRunning: Type.Optional(
      Type.Union([int(1, 'cluster-wide cap on running jobs; null: none'), Type.Null()]),
    ),
    maxAttempts: Type.Optional(int(1, 'attempts before the dead letter')),
    backoffBaseMs: Type.Optional(int(0, 'first retry delay (ms); doubles each attempt, with jitter')),
    backoffMaxMs: Type.Optional(int(0, 'longest retry delay (ms), at least backoffBaseMs')),
    timeoutMs: Type.Optional(
      Type.Union([int(1, 'deadline per attempt (ms) unless the job sets its own; null: none'), Type.Null()]),
    ),
  },
  { additionalProperties: false },
);
export type QueueSettingsInput = Static<typeof QueueSettingsSchema>;

/** The settings a queue without a row of its own runs under (the column defaults of 0001_core.sql). */
export const QUEUE_DEFAULTS: Readonly<QueueSettings> = {
  maxRunning: null,
  maxAttempts: 4,
  backoffBaseMs: 1000,
  backoffMaxMs: 3_600_000,
  timeoutMs: null,
};

export const QUEUE_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** Bad queue input: `field` names where (`settings.maxAttempts`), the message says why. Nothing was written. */
export class QueueInputError extends ValidationError {
  override name = 'QueueInputError';
  readonly field: string;
  readonly reason: string;

  constructor(field: string, reason: string) {
    super([{ field, reason }]);
    this.field = field;
    this.reason = reason;
  }
}

export function queueNameCheck(name: unknown, field = 'name'): string {
  if (typeof name !== 'string' || !QUEUE_NAME_RE.test(name)) {
    throw new QueueInputError(field, `${JSON.stringify(name)} is not a queue name (${QUEUE_NAME_RE.source})`);
  }
  return name;
}

const MINIMUM: Record<keyof QueueSettings, { min: number; nullable: boolean }> = {
  maxRunning: { min: 1, nullable: true },
  maxAttempts: { min: 1, nullable: false },
  backoffBaseMs: { min: 0, nullable: false },
  backoffMaxMs: { min: 0, nullable: false },
  timeoutMs: { min: 1, nullable: true },
};

/** Checks `value` against the one schema; `at` prefixes the field named in an error. */
export function queueSettingsCheck(value: unknown, at = 'settings'): Partial<QueueSettings> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new QueueInputError(at, 'must be an object of settings');
  }
  for (const [k, v] of Object.entries(value)) {
    const rule = MINIMUM[k as keyof QueueSettings] as (typeof MINIMUM)[keyof QueueSettings] | undefined;
    if (rule === undefined) {
      throw new QueueInputError(
        `${at}.${k}`,
        `unknown setting (expected one of ${Object.keys(MINIMUM).join(', ')})`,
      );
    }
    if (v === undefined || (v === null && rule.nullable)) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < rule.min || v > INT4_MAX) {
      const range = `must be an integer from ${rule.min} to ${INT4_MAX}${rule.nullable ? ', or null for none' : ''}`;
      throw new QueueInputError(`${at}.${k}`, `${range}, got ${JSON.stringify(v)}`);
    }
  }
  // The schema is what the API validates with: the check above must agree with it.
  if (!Value.Check(QueueSettingsSchema, value))
    throw new QueueInputError(at, 'does not match the queue settings schema');
  return value;
}

/** backoffMaxMs below backoffBaseMs, once a change is merged with the current settings. */
export function queueSettingsMergedCheck(next: QueueSettings, at = 'settings'): void {
  if (next.backoffMaxMs < next.backoffBaseMs) {
    throw new QueueInputError(`${at}.backoffMaxMs`, `must be at least backoffBaseMs (${next.backoffBaseMs})`);
  }
}
