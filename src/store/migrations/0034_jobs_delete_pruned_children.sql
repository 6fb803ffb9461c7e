-- Retention's batch of jobs (store/retention.ts) deletes the jobs' attempts and effects itself, to
-- count them for its metrics: counting them beside this trigger's deletes read the same index
-- entries twice, 5,000 of the ~18,000 buffers a batch of 1,000 jobs read. The statement marks
-- itself by its start time in tidemark.pruned_children, so the mark never reaches a later
-- statement of the same transaction; every other delete of jobs is as before.
CREATE OR REPLACE FUNCTION tidemark_jobs_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('tidemark.pruned_children', true) IS DISTINCT FROM statement_timestamp()::text THEN
    DELETE FROM job_attempts a WHERE a.job_id = ANY (ARRAY(SELECT id FROM old_jobs));
    DELETE FROM job_effects e WHERE e.job_id = ANY (ARRAY(SELECT id FROM old_jobs));
  END IF;
  DELETE FROM job_keys k USING old_jobs o
   WHERE NOT o.key_generated AND k.queue = o.queue AND k.key = o.idempotency_key AND k.job_id = o.id;
  INSERT INTO job_dead_counts AS c (queue, n)
  SELECT queue, -count(*) FROM old_jobs WHERE state = 'dead' GROUP BY queue ORDER BY queue
  ON CONFLICT (queue) DO UPDATE SET n = c.n + EXCLUDED.n;
  RETURN NULL;
END
$$;
