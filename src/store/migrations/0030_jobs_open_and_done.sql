-- Jobs are partitioned by state: jobs_open holds the jobs still to run (scheduled, available,
-- running, failed and waiting for a retry), jobs_done the finished ones, itself partitioned by id
-- into slices that the maintenance role cuts (store/job-slices.ts). In one table, every new job and
-- every claim's and completion's new row version went to a page of old history with room for one
-- row, so a drain of 50,000 beside 2 million finished jobs read 50,000 cold pages and ran at 0.3x of
-- the same drain without the history. Here the claim and the completion touch the small open
-- partition, and a finished job moves into the newest slice, whose pages are recent.
--
-- A unique index on a partitioned table must hold the partition keys, so the keys callers give
-- (unique per queue, finished or not) move to job_keys, which the enqueue writes first.

-- The identity's sequence goes with the old table: a plain sequence of the same name carries on.
CREATE SEQUENCE tidemark_jobs_id_next AS bigint;
SELECT setval('tidemark_jobs_id_next', last_value, is_called) FROM jobs_id_seq;

DROP VIEW job_attempt_history;
ALTER TABLE jobs RENAME TO jobs_flat;

CREATE TABLE jobs (LIKE jobs_flat INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
  PARTITION BY LIST (state);
ALTER TABLE jobs ALTER COLUMN id SET DEFAULT nextval('tidemark_jobs_id_next');
CREATE TABLE jobs_open PARTITION OF jobs FOR VALUES IN ('scheduled', 'available', 'running', 'failed')
  WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
CREATE TABLE jobs_done PARTITION OF jobs FOR VALUES IN ('succeeded', 'dead', 'cancelled')
  PARTITION BY RANGE (id);
-- The first slice takes every job so far and the next 10 million ids (JOB_SLICE_IDS); the
-- maintenance role attaches each next slice before the ids reach it. A job whose id no slice covers
-- (the role not running) goes to the default partition, so no completion can fail for want of one.
DO $$
BEGIN
  EXECUTE format(
    'CREATE TABLE jobs_done_0 PARTITION OF jobs_done FOR VALUES FROM (MINVALUE) TO (%s)
       WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02)',
    (SELECT last_value + 10000000 FROM tidemark_jobs_id_next));
END
$$;
CREATE TABLE jobs_done_default PARTITION OF jobs_done DEFAULT
  WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);

INSERT INTO jobs SELECT * FROM jobs_flat;

CREATE TABLE job_keys (
  queue  text NOT NULL,
  key    text NOT NULL,
  job_id bigint NOT NULL,
  PRIMARY KEY (queue, key)
);
INSERT INTO job_keys (queue, key, job_id) SELECT queue, idempotency_key, id FROM jobs_flat WHERE NOT key_generated;

DROP TABLE jobs_flat;
ALTER SEQUENCE tidemark_jobs_id_next RENAME TO jobs_id_seq;
ALTER SEQUENCE jobs_id_seq OWNED BY jobs.id;

-- Ids are unique by the sequence; the key holds state because a partitioned table's must.
ALTER TABLE jobs ADD CONSTRAINT jobs_pkey PRIMARY KEY (id, state);
CREATE INDEX jobs_available_idx ON jobs (queue, tenant_id, priority DESC, run_at, id) WHERE state = 'available';
CREATE INDEX jobs_cancelled_id_idx ON jobs (id) WHERE state = 'cancelled';
CREATE INDEX jobs_dead_id_idx ON jobs (id) WHERE state = 'dead';
CREATE INDEX jobs_dead_idx ON jobs (queue, finished_at DESC, id) WHERE state = 'dead';
CREATE INDEX jobs_finished_idx ON jobs (finished_at) WHERE state IN ('succeeded', 'dead', 'cancelled');
CREATE INDEX jobs_running_idx ON jobs (queue, tenant_id, lease_expires_at)
  WHERE state = 'running' AND lease_expires_at IS NOT NULL;
CREATE INDEX jobs_schedule_active_idx ON jobs (schedule_id, state)
  WHERE schedule_id IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'failed');
CREATE INDEX jobs_waiting_idx ON jobs (run_at) WHERE state IN ('scheduled', 'failed');

CREATE OR REPLACE FUNCTION tidemark_jobs_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM job_attempts a WHERE a.job_id = ANY (ARRAY(SELECT id FROM old_jobs));
  DELETE FROM job_effects e WHERE e.job_id = ANY (ARRAY(SELECT id FROM old_jobs));
  DELETE FROM job_keys k USING old_jobs o
   WHERE NOT o.key_generated AND k.queue = o.queue AND k.key = o.idempotency_key AND k.job_id = o.id;
  INSERT INTO job_dead_counts AS c (queue, n)
  SELECT queue, -count(*) FROM old_jobs WHERE state = 'dead' GROUP BY queue ORDER BY queue
  ON CONFLICT (queue) DO UPDATE SET n = c.n + EXCLUDED.n;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tidemark_jobs_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM job_dead_counts;
  DELETE FROM job_keys;
  RETURN NULL;
END
$$;

CREATE TRIGGER jobs_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION tidemark_jobs_delete();
CREATE TRIGGER jobs_notify_insert AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION tidemark_jobs_notify();
CREATE TRIGGER jobs_truncate AFTER TRUNCATE ON jobs FOR EACH STATEMENT EXECUTE FUNCTION tidemark_jobs_truncate();

CREATE VIEW job_attempt_history AS
  SELECT job_id, attempt, worker, started_at, finished_at, outcome, error FROM job_attempts
  UNION ALL
  SELECT id, attempt, lease_owner, started_at, finished_at, 'succeeded', NULL
  FROM jobs
  WHERE state = 'succeeded' AND lease_owner IS NOT NULL;

ANALYZE jobs;
