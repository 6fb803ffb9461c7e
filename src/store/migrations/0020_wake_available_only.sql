-- The insert trigger wakes a queue only for jobs that can be claimed now: a statement that inserted
-- only jobs due later (state 'scheduled') wakes no one, since the promotion that makes them available
-- wakes their queue then. A lone enqueue on the pool sends its wake-up through this trigger again
-- when no other enqueue of its process is in flight (store/job-insert.ts, insertOneThenWake), and it
-- sent none for a job due later; nor did any caller need one. Otherwise as 0017: a queue's one
-- available job is named (`<queue> <id>`), several only by the queue, and the trigger stays quiet
-- for a caller that sends the wake-up itself after the commit.
CREATE OR REPLACE FUNCTION tidemark_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('tidemark.wake', true) = 'after_commit' THEN
    RETURN NULL;
  END IF;
  PERFORM pg_notify('tidemark_jobs', CASE WHEN q.n = 1 THEN q.queue || ' ' || q.id ELSE q.queue END)
  FROM (SELECT queue, count(*) AS n, min(id) AS id FROM new_jobs WHERE state = 'available' GROUP BY queue) q;
  RETURN NULL;
END
$$;
