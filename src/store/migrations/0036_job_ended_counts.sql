-- The sizes of both states jobs_ended holds (0031), dead and cancelled, per queue, kept as counts in
-- one table: job_dead_counts (0027) generalised by state. Cancelled jobs are a history too (kept 30
-- days), and the jobs page counted them at every load, reading up to its cap of 10,000 entries of
-- jobs_cancelled_id_idx (~0.6 ms with 50,000 cancelled jobs kept).
--
-- As in 0027, a count changes only where a job enters or leaves one of the two states: the
-- statements that move jobs there or back add to it in the same statement (store/job-ended-counts.ts),
-- the triggers below count the rows deleted or inserted in either state, and a truncate empties it.
-- Each writer adds its rows grouped by (queue, state), in that order, so two statements changing
-- the same counts lock their rows in the same order.
--
-- Both states are counted from their rows here rather than the dead copied from job_dead_counts,
-- so a dead count that had drifted from its rows starts exact again.
CREATE TABLE job_ended_counts (
  queue text NOT NULL,
  state text NOT NULL CHECK (state IN ('dead', 'cancelled')),
  n     bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (queue, state)
);
INSERT INTO job_ended_counts (queue, state, n)
SELECT queue, state, count(*) FROM jobs WHERE state IN ('dead', 'cancelled') GROUP BY queue, state;
DROP TABLE job_dead_counts;

-- As 0034, the ended rows deleted counted by state.
CREATE OR REPLACE FUNCTION tidemark_jobs_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('tidemark.pruned_children', true) IS DISTINCT FROM statement_timestamp()::text THEN
    DELETE FROM job_attempts a WHERE a.job_id = ANY (ARRAY(SELECT id FROM old_jobs));
    DELETE FROM job_effects e WHERE e.job_id = ANY (ARRAY(SELECT id FROM old_jobs));
  END IF;
  DELETE FROM job_keys k USING old_jobs o
   WHERE NOT o.key_generated AND k.queue = o.queue AND k.key = o.idempotency_key AND k.job_id = o.id;
  INSERT INTO job_ended_counts AS c (queue, state, n)
  SELECT queue, state, -count(*) FROM old_jobs WHERE state IN ('dead', 'cancelled')
   GROUP BY queue, state ORDER BY queue, state
  ON CONFLICT (queue, state) DO UPDATE SET n = c.n + EXCLUDED.n;
  RETURN NULL;
END
$$;

-- As 0027, the rows inserted dead or cancelled counted by state.
CREATE OR REPLACE FUNCTION tidemark_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO job_ended_counts AS c (queue, state, n)
  SELECT queue, state, count(*) FROM new_jobs WHERE state IN ('dead', 'cancelled')
   GROUP BY queue, state ORDER BY queue, state
  ON CONFLICT (queue, state) DO UPDATE SET n = c.n + EXCLUDED.n;
  IF current_setting('tidemark.wake', true) = 'after_commit' THEN
    RETURN NULL;
  END IF;
  PERFORM pg_notify('tidemark_jobs', CASE WHEN q.n = 1 THEN q.queue || ' ' || q.id ELSE q.queue END)
  FROM (SELECT queue, count(*) AS n, min(id) AS id FROM new_jobs WHERE state = 'available' GROUP BY queue) q;
  RETURN NULL;
END
$$;

-- As 0030, with the new table.
CREATE OR REPLACE FUNCTION tidemark_jobs_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM job_ended_counts;
  DELETE FROM job_keys;
  RETURN NULL;
END
$$;
