-- Operators (issues 16 and 19): the worker registry, queue pause, and the audit of queue changes.

-- One row per worker process: written at start, heartbeated, marked stopped on a clean stop. A
-- process that stops heartbeating (SIGKILL, a lost host) is judged lost when its heartbeat is older
-- than three of its own intervals, by the database's clock. Stopped and lost rows are pruned by the
-- maintenance role (RetentionConfig.workers), so the table holds about the live fleet.
CREATE TABLE workers (
  id           text PRIMARY KEY,
  host         text NOT NULL,
  pid          integer NOT NULL,
  version      text NOT NULL,
  -- [{ "name", "concurrency", "running" }]: slots per queue and how many were in use at the heartbeat.
  queues       jsonb NOT NULL,
  heartbeat_ms integer NOT NULL CHECK (heartbeat_ms > 0),
  started_at   timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  stopped_at   timestamptz
);

-- A paused queue is skipped by every claim (the claim statements read these columns of the one row
-- they already look up); running jobs finish.
ALTER TABLE queues
  ADD COLUMN paused_at timestamptz,
  ADD COLUMN paused_by text;

-- Every pause, resume and settings change: who, when, and the queue's settings before and after.
-- Written by people and by workers starting with changed settings, so it grows by tens of rows a day.
CREATE TABLE queue_changes (
  id     bigserial PRIMARY KEY,
  queue  text NOT NULL,
  at     timestamptz NOT NULL DEFAULT now(),
  by     text NOT NULL,
  change text NOT NULL CHECK (change IN ('pause', 'resume', 'update')),
  before jsonb NOT NULL,
  after  jsonb NOT NULL
);
CREATE INDEX queue_changes_queue_idx ON queue_changes (queue, id DESC);

INSERT INTO retention_counts (table_name) VALUES ('workers');
