/**
 * The API's JSON as the dashboard reads it (src/api/job-json.ts, src/api/routes/*.ts). Kept by hand
 * beside the pages that use it: the dashboard imports nothing from the server side, it only speaks
 * HTTP, so this file is the one place to change when a route's answer changes.
 */

export interface Page<T> {
  items: T[];
  next: string | number | null;
}

export interface Job {
  id: number;
  queue: string;
  kind: string;
  tenantId: string;
  payload: unknown;
  priority: number;
  state: string;
  runAt: string;
  attempt: number;
  maxAttempts: number;
  timeoutMs: number | null;
  heartbeatMs: number | null;
  idempotencyKey: string;
  leaseOwner: string | null;
  leaseExpiresAt: string | null;
  progress: unknown;
  heartbeatAt: string | null;
  lastError: string | null;
  scheduleId: string | null;
  cancelRequestedAt: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface Attempt {
  attempt: number;
  worker: string;
  startedAt: string;
  finishedAt: string | null;
  durationMs: number | null;
  outcome: string | null;
  error: string | null;
}

export type JobDetail = Job & { attempts: Attempt[] };

export const JOB_STATES = [
  'scheduled',
  'available',
  'running',
  'succeeded',
  'failed',
  'dead',
  'cancelled',
] as const;

export interface Schedule {
  id: string;
  tenantId: string;
  name: string;
  spec: string;
  /** Null when the stored spec no longer compiles; specError then says why. */
  compiled: { kind: string; canonical: string; description: string; timeZone: string } | null;
  specError: string | null;
  nextFireTimes: string[];
  timeZone: string;
  misfire: { policy: string; cap: number; startingDeadlineMs: number | null };
  overlap: string;
  jitterMs: number;
  target: { queue: string; kind: string; url?: string; payload: unknown };
  paused: boolean;
  version: number;
  nextFireAt: string | null;
  lastFireAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/** POST /v1/schedules/{id}/backfill: what a backfill did, or (dryRun) would do. */
export interface Backfill {
  dryRun: boolean;
  fireTimes: number;
  firstFireAt: string | null;
  lastFireAt: string | null;
  created: number;
  existing: number;
  existingByState: { enqueued: number; skipped: number; missed: number };
}

export interface Occurrence {
  fireAt: string;
  state: string;
  source: string;
  lateMs: number;
  jobId: number | null;
  reason: string | null;
  materialisedAt: string;
}

/** One row of GET /v1/workflows: the workflow's own counters, no per-node detail. */
export interface WorkflowSummary {
  id: string;
  name: string;
  tenantId: string;
  state: string;
  nodeCount: number;
  unfinished: number;
  failedNodes: number;
  startedAt: string;
  finishedAt: string | null;
}

export interface WorkflowStatus {
  id: string;
  name: string;
  tenantId: string;
  state: string;
  failurePolicy: string;
  error: string | null;
  generation: number;
  nodeCount: number;
  nodes: Record<string, number>;
  jobs: Record<string, number>;
  startedAt: string;
  finishedAt: string | null;
}

export interface WorkflowNode {
  key: string;
  type: string;
  state: string;
  jobId: number | null;
  jobState: string | null;
  attempt: number | null;
  runs: number;
  pendingDeps: number;
  /** The node's own error, else its current job's last error. */
  error: string | null;
  /** Keys of the nodes this one waits for. */
  dependsOn: string[];
  /** When its dependencies were met (its job was enqueued), its job started, and it finished. */
  releasedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
}

/** GET /v1/workflows/{id}/timeline: one node's times. */
export interface TimelineNode {
  key: string;
  type: string;
  state: string;
  jobId: number | null;
  jobState: string | null;
  attempts: number | null;
  /** The dependency whose success released it. */
  releasedBy: string | null;
  releasedAt: string | null;
  /** Its job's first attempt's start. */
  startedAt: string | null;
  /** Its job's last attempt's end, once finished. */
  finishedAt: string | null;
  critical: boolean;
}

export interface WorkflowTimeline {
  id: string;
  state: string;
  nodeCount: number;
  startedAt: string;
  finishedAt: string | null;
  /** Root first. */
  criticalPath: TimelineNode[];
  criticalPathComplete: boolean;
  items: TimelineNode[];
  next: string | null;
}

export interface ApiErrorBody {
  error: { code: string; message: string; fields?: { field: string; reason: string }[]; requestId: string };
}

/** GET /v1/history: per-minute figures over a window (src/api/routes/history.ts). */
export interface History {
  from: string;
  to: string;
  lag: { at: string; count: number; p50Ms: number; p99Ms: number; exact: boolean }[];
  throughput: { at: string; succeeded: number; failed: number }[];
  backlog: { at: string; waiting: number }[];
}
