-- An effect's key (ctx.once) goes with the job that recorded it, by retention or a discard. Kept
-- after its job, it outlived the job's idempotency key: a new job enqueued with that key once the
-- old one was pruned found the key and skipped its effect, and the table grew by one row per effect
-- for ever (43 million a day at 500 jobs/s with one effect each).
CREATE INDEX job_effects_job_idx ON job_effects (job_id);

CREATE OR REPLACE FUNCTION tidemark_jobs_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM job_attempts a WHERE a.job_id = ANY (ARRAY(SELECT id FROM old_jobs));
  DELETE FROM job_effects e WHERE e.job_id = ANY (ARRAY(SELECT id FROM old_jobs));
  INSERT INTO job_dead_counts AS c (queue, n)
  SELECT queue, -count(*) FROM old_jobs WHERE state = 'dead' GROUP BY queue ORDER BY queue
  ON CONFLICT (queue) DO UPDATE SET n = c.n + EXCLUDED.n;
  RETURN NULL;
END
$$;
