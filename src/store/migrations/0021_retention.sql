-- Retention (issue 18): finished jobs with their attempts, occurrences and finished workflows are
-- deleted after a retention period by the maintenance role (src/maintenance/), in bounded batches.

-- 1. A deleted job must not need a lookup elsewhere. occurrences.job_id was the last foreign key to
--    jobs, and occurrences has no index on job_id: each deleted job would have cost a scan of the
--    ledger. The ledger outlives the job anyway (occurrences are kept 30 days, succeeded jobs 7), so
--    an occurrence may name a job that is gone, as a workflow node already may.
ALTER TABLE occurrences DROP CONSTRAINT occurrences_job_id_fkey;

-- 2. Lateness over a time range (occurrenceLatenessPerMinute) reads occurrences by fire time. A BRIN
--    index: rows arrive in fire-time order, so ranges of 128 pages summarise tightly, it costs
--    nothing on the scheduler's write path (a B-tree would add an entry per occurrence), and it can
--    never serve an ORDER BY, so a schedule's ledger page keeps its own (schedule_id, fire_at) index
--    instead of walking every schedule's rows backwards by time.
CREATE INDEX occurrences_fire_brin ON occurrences USING brin (fire_at) WITH (autosummarize = on);

-- 3. What the ledger said, kept after its rows are gone: rolled up by the very statement that deletes
--    them (occurrencePruneBatch, DELETE … RETURNING), so no row is counted twice or lost. Two grains,
--    both bounded whatever the rate: per minute of fire time per tenant (the lateness the dashboard
--    charts, 1,440 rows a day per tenant) and per day per schedule (a schedule's history: what ran,
--    what was skipped or missed, how late).
--    scheduled: enqueued by the schedule (these carry the lateness); triggered: by trigger-now;
--    late: scheduled ones decided more than 2 s after their fire time (the dashboard's "late").
CREATE TABLE occurrence_minutes (
  minute     timestamptz NOT NULL,
  tenant_id  text NOT NULL,
  scheduled  bigint NOT NULL DEFAULT 0,
  triggered  bigint NOT NULL DEFAULT 0,
  skipped    bigint NOT NULL DEFAULT 0,
  missed     bigint NOT NULL DEFAULT 0,
  late       bigint NOT NULL DEFAULT 0,
  lag_sum_s  double precision NOT NULL DEFAULT 0,
  lag_max_s  double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (minute, tenant_id)
);
CREATE TABLE occurrence_days (
  schedule_id uuid NOT NULL,
  day         timestamptz NOT NULL,
  tenant_id   text NOT NULL,
  scheduled   bigint NOT NULL DEFAULT 0,
  triggered   bigint NOT NULL DEFAULT 0,
  skipped     bigint NOT NULL DEFAULT 0,
  missed      bigint NOT NULL DEFAULT 0,
  late        bigint NOT NULL DEFAULT 0,
  lag_sum_s   double precision NOT NULL DEFAULT 0,
  lag_max_s   double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (schedule_id, day)
);

-- 4. A finished workflow of 100,000 nodes is pruned in batches of nodes, so it exists half-deleted
--    for a while. pruned_at marks it first (only if it is not running); a marked workflow can no
--    longer be locked (workflowLock, workflowLockByJobs), so neither resume nor a dead-letter retry
--    of one of its jobs can bring it back to running with nodes missing. Its row goes last.
ALTER TABLE workflows ADD COLUMN pruned_at timestamptz;
-- Finished workflows oldest first; the running ones (the only ones that churn) are not in it.
CREATE INDEX workflows_finished_idx ON workflows (finished_at, id) WHERE state <> 'running';

-- 5. Deletes leave dead tuples in bulk: vacuum the ledger and the attempts as often as jobs (0001).
ALTER TABLE occurrences SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE job_attempts SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
-- The workflows whose pruning has begun: few at any time, found again by the next holder.
CREATE INDEX workflows_pruned_idx ON workflows (id) WHERE pruned_at IS NOT NULL;

-- Rows retention has deleted, per table, since the database was made: /metrics on every API replica
-- reads the same totals, whichever replica pruned (tidemark_retention_pruned_rows_total).
CREATE TABLE retention_counts (
  table_name text PRIMARY KEY,
  rows       bigint NOT NULL DEFAULT 0
);
INSERT INTO retention_counts (table_name)
VALUES ('jobs'), ('job_attempts'), ('occurrences'), ('workflows'), ('workflow_nodes');

-- The dead letter's and the cancelled jobs' first page, newest first, reads these instead of walking
-- the primary key back through every finished job until it has found a page (20,000 rows read for
-- 200 dead jobs at a 1 % dead rate; test/api/list-plans.test.ts). Only a job's last write, the one
-- that kills or cancels it, adds an entry: nothing on the claim or success path.
CREATE INDEX jobs_dead_id_idx ON jobs (id) WHERE state = 'dead';
CREATE INDEX jobs_cancelled_id_idx ON jobs (id) WHERE state = 'cancelled';

-- The attempts of deleted jobs, as 0013's trigger removes them, looked up by primary key: joined to
-- the transition table, the planner read all of job_attempts for each statement (10.8 of 13.0 ms
-- of a 1,000-job pruning batch beside 300,000 jobs of history, EXPLAIN ANALYZE).
CREATE OR REPLACE FUNCTION tidemark_jobs_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM job_attempts a WHERE a.job_id = ANY (ARRAY(SELECT id FROM old_jobs));
  RETURN NULL;
END
$$;
