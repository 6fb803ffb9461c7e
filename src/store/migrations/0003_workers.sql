-- Workers (issue 5): claiming, leases, retries with backoff, cancellation, the dead letter and the
-- idempotency helpers. Columns are only added (with defaults), so the scheduler's own INSERTs into
-- jobs stay valid whatever it names.

-- Per-job overrides of the queue's retry policy; NULL means "the queue's, else the built-in default".
ALTER TABLE jobs
  ADD COLUMN backoff_base_ms integer CHECK (backoff_base_ms >= 0),
  ADD COLUMN backoff_max_ms integer CHECK (backoff_max_ms >= 0),
  -- Set by a cancel of a running job; the worker holding it aborts the handler and finishes the job
  -- as cancelled (or the reaper does, if that worker is gone).
  ADD COLUMN cancel_requested_at timestamptz;

-- The claim path: only 'available' rows, so the head of the line is never behind a pile of future
-- ones. Future jobs ('scheduled') and retries waiting out their backoff ('failed') are promoted to
-- 'available' when due (jobPromoteDue), using the run_at index below. Partitioned by tenant so a
-- claim can take the head of every tenant's line (fair share) with one short index range per tenant,
-- instead of reading past one tenant's backlog of 100,000.
CREATE INDEX jobs_available_idx ON jobs (queue, tenant_id, priority DESC, run_at, id) WHERE state = 'available';
CREATE INDEX jobs_waiting_idx ON jobs (run_at) WHERE state IN ('scheduled', 'failed');
-- Running jobs: counted for cluster-wide limits and quotas, and scanned by the reaper. Small by
-- construction (only what runs right now).
CREATE INDEX jobs_running_idx ON jobs (queue, tenant_id, lease_expires_at) WHERE state = 'running';
-- The dead letter, listed newest first per queue.
CREATE INDEX jobs_dead_idx ON jobs (queue, finished_at DESC, id) WHERE state = 'dead';
-- A job in a quota is the exception; the claim checks "any quota at all?" on every batch.
CREATE INDEX tenants_quota_idx ON tenants (id) WHERE max_running IS NOT NULL;

-- A graceful shutdown hands unfinished jobs back: recorded, but not a failure of the job.
ALTER TABLE job_attempts DROP CONSTRAINT job_attempts_outcome_check;
ALTER TABLE job_attempts ADD CONSTRAINT job_attempts_outcome_check
  CHECK (outcome IN ('succeeded', 'failed', 'timed_out', 'cancelled', 'lease_lost', 'released'));

-- Wake-up does not depend on which code path inserted a job (client, scheduler, workflow): one
-- NOTIFY per queue per inserting statement, on the channel every worker LISTENs to. A statement-level
-- trigger costs one DISTINCT over the new rows, not a call per row (50,000-row enqueue: one notify).
CREATE FUNCTION tidemark_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tidemark_jobs', q.queue) FROM (SELECT DISTINCT queue FROM new_jobs) q;
  RETURN NULL;
END
$$;
CREATE TRIGGER jobs_notify_insert AFTER INSERT ON jobs
  REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION tidemark_jobs_notify();

-- Exponential backoff with "equal jitter": half the delay is fixed, half random, so retries of a
-- burst spread out but never come back sooner than half the nominal delay. Defined in SQL because
-- both the worker's failure write and the reaper use it. Exponent capped so 2^n stays finite.
CREATE FUNCTION tidemark_backoff_ms(attempt integer, base_ms integer, max_ms integer)
RETURNS double precision LANGUAGE sql VOLATILE AS $$
  SELECT d / 2 + random() * d / 2
  FROM (SELECT least(max_ms::float8, base_ms::float8 * power(2::float8, least(greatest(attempt, 1) - 1, 60))) AS d) s
$$;

-- Dedupe-first idempotency: a handler inserts its key here before its effect, in the transaction
-- that performs (or brackets) the effect. A key already here means the effect already committed.
CREATE TABLE job_effects (
  key         text PRIMARY KEY,
  job_id      bigint,
  attempt     integer,
  recorded_at timestamptz NOT NULL DEFAULT now()
);
