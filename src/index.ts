/**
 * The public surface of `import … from 'tidemark'`: the client, the long-running roles, the API
 * server, migrate, the errors and the types their signatures use. Operational pieces (timers, metric
 * exporters, maintenance, defaults) are in `tidemark/operations` (src/operations.ts).
 */
export { Client, type ClientOptions } from './client.ts';
export type { Pool, PoolClient, Queryable } from './store/pool.ts';
export { migrate, type MigrateResult } from './migrate.ts';
export { MigrationError } from './store/migrate.ts';
export { FakeClock, systemClock, type Clock } from './clock.ts';
export {
  TidemarkError,
  ValidationError,
  NotFoundError,
  VersionConflictError,
  ConfigError,
  TIDEMARK_ERROR_CODES,
  type TidemarkErrorCode,
} from './errors.ts';
export type { InputProblem } from './input.ts';
export {
  BACKFILL_MAX,
  ScheduleClient,
  ScheduleInputError,
  ScheduleNotFoundError,
  ScheduleVersionConflictError,
  type BackfillResult,
  type LatenessBucket,
  type Occurrence,
  type OccurrenceSource,
  type OccurrenceState,
  type Schedule,
  type ScheduleBackfillInput,
  type ScheduleInput,
  type ScheduleUpdate,
} from './scheduler/schedule-client.ts';
export type { ScheduleBody, SchedulePatchBody, ScheduleTargetBody } from './contract/schedule.ts';
export type { JobBody } from './contract/job.ts';
export { Scheduler, type SchedulerOptions } from './scheduler/scheduler.ts';
export type { SchedulerMetricsSnapshot, SchedulerRole } from './scheduler/metrics.ts';
export type { Jump, SchedulerTime, TimeSourceKind } from './scheduler/time-source.ts';
export type { DueIndexKind } from './scheduler/due-index.ts';
export { Worker, type WorkerOptions, type QueueOptions } from './worker/worker.ts';
export type { LatencySummary, QueueMetrics } from './worker/metrics.ts';
export type { HistogramCounts } from './histogram.ts';
export type { Handler, HandlerContext, Handlers } from './worker/handler.ts';
export {
  JobCancelledError,
  JobTimeoutError,
  JobValidationError,
  LeaseLostError,
  NonRetryableError,
  RetryAfterError,
  WorkerShutdownError,
} from './worker/errors.ts';
export { effectOnce, type OnceResult } from './worker/once.ts';
export {
  JobClient,
  JobNotFoundError,
  type AttemptOutcome,
  type EnqueueInput,
  type EnqueueResult,
  type Job,
  type JobAttempt,
  type JobListOptions,
  type JobSearchOptions,
  type JobSearchResult,
  type JobState,
  type JobWithAttempts,
} from './worker/job-client.ts';
export {
  QueueClient,
  type ChangeOptions,
  type Queue,
  type QueueChange,
  type QueueSnapshot,
} from './worker/queue-client.ts';
export {
  QUEUE_DEFAULTS,
  QueueInputError,
  QueueSettingsSchema,
  type QueueSettingsInput,
} from './worker/queue-settings.ts';
export {
  WorkerRegistryClient,
  type WorkerInfo,
  type WorkerJob,
  type WorkerQueueSlots,
  type WorkerState,
} from './worker/registry-client.ts';
export {
  WorkflowClient,
  WorkflowNotFoundError,
  WorkflowSignalUndeclaredError,
  type SignalResult,
} from './workflow/workflow-client.ts';
export {
  WorkflowValidationError,
  type FailurePolicy,
  type JobNodeSpec,
  type NodeSpec,
  type SignalNodeSpec,
  type WorkflowSpec,
} from './workflow/definition.ts';
export type { NodePage, WorkflowNode, WorkflowStatus } from './workflow/status.ts';
export type { TimelineNode, TimelineOptions, WorkflowTimeline } from './workflow/timeline.ts';
export type { SubmitOptions, SubmitResult } from './workflow/submit.ts';
export type { NodeState } from './store/workflow-nodes.ts';
export type { WorkflowState } from './store/workflows.ts';
export type { WorkflowListOptions, WorkflowPage, WorkflowSummary } from './workflow/list.ts';
export { createApiServer, type ApiServer, type ApiServerOptions } from './api/server.ts';
export type { Api } from './api/app.ts';
export type { ApiMetrics } from './api/metrics.ts';
export { RetentionConfigError } from './maintenance/retention-config.ts';
export { serveMetrics, type MetricsServer, type MetricsServerOptions } from './api/metrics-server.ts';
export { pushHandlers, type PushOptions } from './push/handler.ts';
export { pushTarget } from './push/target.ts';
