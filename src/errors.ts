/**
 * Every error the library throws on purpose is a TidemarkError with a stable `code`; where one
 * corresponds to an HTTP answer the code is the API's (`invalid_request`, `not_found`,
 * `version_conflict`, `signal_not_declared`, listed in docs/api.md), so a program can switch on the
 * same strings whichever entry point it used. Pure: no I/O.
 */
import type { InputProblem } from './input.ts';

export const TIDEMARK_ERROR_CODES = [
  'invalid_request',
  'not_found',
  'version_conflict',
  'signal_not_declared',
  'invalid_config',
  'migration_failed',
  'non_retryable',
  'retry_after',
  'job_timeout',
  'job_cancelled',
  'lease_lost',
  'worker_shutdown',
] as const;
export type TidemarkErrorCode = (typeof TIDEMARK_ERROR_CODES)[number];

export abstract class TidemarkError extends Error {
  abstract readonly code: TidemarkErrorCode;
}

/** Bad input: every bad field with the reason, relative to the input (`target.queue`, `jobs.3.priority`). Nothing was written. */
export class ValidationError extends TidemarkError {
  override name = 'ValidationError';
  readonly code = 'invalid_request';
  readonly fields: InputProblem[];

  constructor(fields: InputProblem[], options?: ErrorOptions) {
    super(fields.map((f) => `${f.field}: ${f.reason}`).join('; '), options);
    this.fields = fields;
  }
}

/** An action named an id that does not exist (a read of one thing by id returns null instead). */
export class NotFoundError extends TidemarkError {
  override name = 'NotFoundError';
  readonly code = 'not_found';
}

/** A write made against a version that is no longer current; `currentVersion` is the one it is at now. */
export class VersionConflictError extends TidemarkError {
  override name = 'VersionConflictError';
  readonly code = 'version_conflict';
}

/** Options or a configuration file that cannot be used, naming the setting and why. */
export class ConfigError extends TidemarkError {
  override name = 'ConfigError';
  readonly code = 'invalid_config';
}
