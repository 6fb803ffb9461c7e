-- The first schema: tenants, queues, schedules, the occurrence ledger, jobs with their attempts, and
-- the scheduler's lease. Later issues extend it with new files; this one is never edited.

CREATE TABLE tenants (
  id          text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  name        text NOT NULL,
  -- Cluster-wide cap on this tenant's running jobs; NULL means no quota.
  max_running integer CHECK (max_running > 0),
  created_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO tenants (id, name) VALUES ('default', 'Default tenant');

-- A queue is a job class with its own claim loop. Rows are optional: a job may name a queue that has
-- no row, and then runs under the defaults below.
CREATE TABLE queues (
  name            text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'),
  -- Cluster-wide cap on running jobs of this queue, however many workers run; NULL means none.
  max_running     integer CHECK (max_running > 0),
  max_attempts    integer NOT NULL DEFAULT 4 CHECK (max_attempts > 0),
  backoff_base_ms integer NOT NULL DEFAULT 1000 CHECK (backoff_base_ms >= 0),
  backoff_max_ms  integer NOT NULL DEFAULT 3600000 CHECK (backoff_max_ms >= 0),
  timeout_ms      integer CHECK (timeout_ms > 0),
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE schedules (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id            text NOT NULL REFERENCES tenants (id),
  name                 text NOT NULL,
  spec                 text NOT NULL,
  time_zone            text NOT NULL DEFAULT 'UTC',
  dst_gap              text NOT NULL DEFAULT 'shift' CHECK (dst_gap IN ('shift', 'skip')),
  -- NULL follows classic cron: first copy for a fixed hour, both for a wildcard or stepped hour.
  dst_overlap          text CHECK (dst_overlap IN ('first', 'both')),
  misfire_policy       text NOT NULL DEFAULT 'latest' CHECK (misfire_policy IN ('all', 'latest', 'skip')),
  misfire_cap          integer NOT NULL DEFAULT 100 CHECK (misfire_cap > 0),
  starting_deadline_ms integer CHECK (starting_deadline_ms > 0),
  overlap_policy       text NOT NULL DEFAULT 'allow'
                       CHECK (overlap_policy IN ('allow', 'forbid', 'replace', 'buffer_one')),
  jitter_ms            integer NOT NULL DEFAULT 0 CHECK (jitter_ms >= 0),
  -- Intervals count from this instant so they never drift.
  anchor_at            timestamptz NOT NULL DEFAULT now(),
  -- The target: what each occurrence enqueues.
  queue                text NOT NULL,
  kind                 text NOT NULL,
  payload              jsonb NOT NULL DEFAULT '{}',
  priority             integer NOT NULL DEFAULT 0,
  max_attempts         integer CHECK (max_attempts > 0),
  timeout_ms           integer CHECK (timeout_ms > 0),
  paused               boolean NOT NULL DEFAULT false,
  -- Bumped on every edit, so a due-index entry made before the edit is recognised as stale.
  version              integer NOT NULL DEFAULT 1,
  next_fire_at         timestamptz,
  last_fire_at         timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, name)
);
-- The database's own sorted due index: the scheduler reads a bounded range of it, never a scan.
CREATE INDEX schedules_due_idx ON schedules (next_fire_at, id) WHERE NOT paused AND next_fire_at IS NOT NULL;

-- The leader lease. Expiry is judged by the database's clock; the epoch increases on every change of
-- holder and fences every write a leader makes.
CREATE TABLE leases (
  name       text PRIMARY KEY,
  holder     text,
  epoch      bigint NOT NULL DEFAULT 0,
  expires_at timestamptz,
  renewed_at timestamptz
);

CREATE TABLE jobs (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue           text NOT NULL,
  kind            text NOT NULL,
  tenant_id       text NOT NULL DEFAULT 'default',
  payload         jsonb NOT NULL DEFAULT '{}',
  priority        integer NOT NULL DEFAULT 0,
  state           text NOT NULL DEFAULT 'available'
                  CHECK (state IN ('scheduled', 'available', 'running', 'succeeded', 'failed', 'dead', 'cancelled')),
  run_at          timestamptz NOT NULL DEFAULT now(),
  attempt         integer NOT NULL DEFAULT 0,
  max_attempts    integer NOT NULL DEFAULT 4 CHECK (max_attempts > 0),
  timeout_ms      integer CHECK (timeout_ms > 0),
  heartbeat_ms    integer CHECK (heartbeat_ms > 0),
  -- Stable across retries: the occurrence key for scheduled jobs, the caller's otherwise.
  idempotency_key text NOT NULL,
  lease_owner     text,
  lease_expires_at timestamptz,
  progress        jsonb,
  heartbeat_at    timestamptz,
  last_error      text,
  schedule_id     uuid,
  created_at      timestamptz NOT NULL DEFAULT now(),
  started_at      timestamptz,
  finished_at     timestamptz
);
CREATE UNIQUE INDEX jobs_queue_idempotency_key_idx ON jobs (queue, idempotency_key);
-- Every job row is kept as history, so the queue head churns through dead index entries quickly;
-- vacuum this table far more often than the default 20 % of its size.
ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);

CREATE TABLE job_attempts (
  job_id      bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  attempt     integer NOT NULL,
  worker      text NOT NULL,
  started_at  timestamptz NOT NULL,
  finished_at timestamptz,
  outcome     text CHECK (outcome IN ('succeeded', 'failed', 'timed_out', 'cancelled', 'lease_lost')),
  error       text,
  PRIMARY KEY (job_id, attempt)
);

-- The occurrence ledger: one row per (schedule, fire time), whatever became of it.
CREATE TABLE occurrences (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  schedule_id     uuid NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
  fire_at         timestamptz NOT NULL,
  state           text NOT NULL CHECK (state IN ('enqueued', 'skipped', 'missed')),
  materialised_at timestamptz NOT NULL DEFAULT now(),
  epoch           bigint,
  job_id          bigint REFERENCES jobs (id),
  reason          text,
  UNIQUE (schedule_id, fire_at)
);
