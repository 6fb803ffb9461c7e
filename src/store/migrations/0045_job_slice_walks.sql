-- How far the maintenance role has deleted the attempts, effects and keys of a due slice's jobs:
-- written by each batch with its deletes, so a role that takes over (restart, failover) goes on
-- after the last id done instead of the slice's first. Read again from the start, each of up to
-- 10,000 batches a slice costs ~3 ms; and the jobs counted at the drop stay the slice's own.
CREATE TABLE job_slice_walks (
  name text PRIMARY KEY,
  after_id bigint NOT NULL,
  jobs bigint NOT NULL
);
