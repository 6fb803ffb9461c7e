-- Overlap policies (forbid, replace, buffer_one) count a schedule's job that failed an attempt and
-- waits for its retry ('failed') as still busy: the run has begun and not finished. Before this, a
-- schedule whose previous run was between attempts started a new run beside it. The lookups
-- (scheduledJobActivity, buffer_one's predecessor in occurrenceMaterialise) now include 'failed',
-- so the partial index that serves them must too; it stays small (only unfinished jobs).
DROP INDEX jobs_schedule_active_idx;
CREATE INDEX jobs_schedule_active_idx ON jobs (schedule_id, state)
  WHERE schedule_id IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'failed');
