-- Statements that find running jobs by id (completion, failure, release, lease renewal) also say
-- `state = 'running'`, so jobs_running_idx was on offer to them. With statistics taken while
-- nothing ran, the index looked like one row, and the cached generic plan of a 1,000-job completion
-- scanned every running job of the cluster, testing each against the whole id array (8 of its 27 ms
-- with 2,000 running; it grows with every worker added). Naming lease_expires_at in the predicate
-- keeps the index from those statements, which never mention it, so they use the primary key. Every
-- running job has a lease expiry (the claim sets it, only leaving 'running' clears it: the CHECK
-- holds it true), so the index still holds exactly the running jobs; its readers (limits, quotas,
-- the reaper, counts) name the column too.
ALTER TABLE jobs ADD CONSTRAINT jobs_running_has_lease CHECK (state <> 'running' OR lease_expires_at IS NOT NULL);
DROP INDEX jobs_running_idx;
CREATE INDEX jobs_running_idx ON jobs (queue, tenant_id, lease_expires_at)
  WHERE state = 'running' AND lease_expires_at IS NOT NULL;
