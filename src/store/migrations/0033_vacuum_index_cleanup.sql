-- Retention deletes history from the front of each table, a few pages per pass, and the oldest-row
-- read (historyOldestRows) and the daily walk from the first job start at that front. Vacuum skips
-- the indexes when under 2 % of the heap's pages hold dead rows, so the dead entries stayed: after
-- a pruning trial, 94,585 of them at the front of a 10-million-job slice's key, which the
-- oldest-row read went through (509 pages). With index cleanup on, every vacuum removes them. New
-- slices get the same setting where the maintenance role creates them (store/job-slices.ts).
DO $$
DECLARE
  t regclass;
BEGIN
  FOR t IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'jobs_done'::regclass LOOP
    EXECUTE format('ALTER TABLE %s SET (vacuum_index_cleanup = on)', t);
  END LOOP;
END
$$;
ALTER TABLE occurrences SET (vacuum_index_cleanup = on);
ALTER TABLE job_attempts SET (vacuum_index_cleanup = on);
