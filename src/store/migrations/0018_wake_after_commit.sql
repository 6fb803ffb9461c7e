-- An insert whose caller sends the wake-up itself after the commit (store/job-insert.ts,
-- insertOneThenWake) marks its transaction with tidemark.wake = 'after_commit', and the trigger
-- stays quiet: a NOTIFY inside the inserting transaction serialises that transaction's commit flush
-- with every other notifying commit. Every other insert is woken for as before.
CREATE OR REPLACE FUNCTION tidemark_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('tidemark.wake', true) = 'after_commit' THEN
    RETURN NULL;
  END IF;
  PERFORM pg_notify('tidemark_jobs', CASE WHEN q.n = 1 AND q.available THEN q.queue || ' ' || q.id ELSE q.queue END)
  FROM (SELECT queue, count(*) AS n, bool_and(state = 'available') AS available, min(id) AS id
        FROM new_jobs GROUP BY queue) q;
  RETURN NULL;
END
$$;
