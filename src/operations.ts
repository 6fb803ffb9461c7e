/**
 * `import … from 'tidemark/operations'`: the pieces an operator's own process may assemble, beside
 * the user's surface in the root export. The CLI's roles are built from these.
 */
export { SCHEDULER_DEFAULTS } from './scheduler/scheduler.ts';
export { SignalTimer } from './workflow/signal-timer.ts';
export { signalTimeoutsFire } from './store/workflow-signal-timeouts.ts';
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
  type RetentionConfig,
  type RetentionDuration,
  type RetentionOverride,
} from './maintenance/retention-config.ts';
export { PUSH_KIND, PUSH_QUEUE } from './push/target.ts';
