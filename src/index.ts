/** The public surface of `import … from 'tidemark'`. */
export { Client, type ClientOptions } from './client.ts';
export { migrate, type MigrateResult } from './migrate.ts';
export { FakeClock, systemClock, type Clock } from './clock.ts';
export {
  ScheduleClient,
  ScheduleInputError,
  ScheduleNotFoundError,
  ScheduleVersionConflictError,
  type Occurrence,
  type Schedule,
  type ScheduleInput,
  type ScheduleUpdate,
} from './scheduler/schedule-client.ts';
export { Scheduler, SCHEDULER_DEFAULTS, type SchedulerOptions } from './scheduler/scheduler.ts';
export type { SchedulerMetricsSnapshot } from './scheduler/metrics.ts';
export { Worker, type WorkerOptions, type QueueOptions } from './worker/worker.ts';
export type { Handler, HandlerContext, Handlers } from './worker/handler.ts';
export {
  JobCancelledError,
  JobTimeoutError,
  JobValidationError,
  LeaseLostError,
  NonRetryableError,
  WorkerShutdownError,
} from './worker/errors.ts';
export { effectOnce } from './worker/once.ts';
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
export type { EnqueueInput, JobWithAttempts } from './worker/job-client.ts';
export {
  WorkflowClient,
  WorkflowNotFoundError,
  WorkflowSignalUndeclaredError,
  type SignalResult,
} from './workflow/workflow-client.ts';
export {
  WorkflowValidationError,
  type JobNodeSpec,
  type NodeSpec,
  type SignalNodeSpec,
  type WorkflowSpec,
} from './workflow/definition.ts';
export type { NodePage, WorkflowStatus } from './workflow/status.ts';
export type { WorkflowListOptions, WorkflowPage, WorkflowSummary } from './workflow/list.ts';
export { SignalTimer } from './workflow/signal-timer.ts';
export { signalTimeoutsFire } from './store/workflow-signal-timeouts.ts';
export { createApiServer, type ApiServer, type ApiServerOptions } from './api/server.ts';
export { serveMetrics, type MetricsServer, type MetricsServerOptions } from './api/metrics-server.ts';
export {
  exportMaintenanceMetrics,
  exportSchedulerMetrics,
  exportWorkerMetrics,
} from './api/process-metrics.ts';
export {
  Maintenance,
  MAINTENANCE_DEFAULTS,
  type MaintenanceOptions,
  type PassResult,
} from './maintenance/maintenance.ts';
export type { MaintenanceMetricsSnapshot, PrunedTable } from './maintenance/metrics.ts';
export {
  RETENTION_DEFAULTS,
  RetentionConfigError,
  type RetentionConfig,
  type RetentionDuration,
  type RetentionOverride,
} from './maintenance/retention-config.ts';
export { PushExecutor, type PushExecutorOptions } from './push/executor.ts';
export { PUSH_KIND, PUSH_QUEUE } from './push/target.ts';
