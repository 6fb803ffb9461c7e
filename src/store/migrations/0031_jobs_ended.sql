-- Dead and cancelled jobs leave jobs_done's slices for a partition of their own, jobs_ended: a few
-- in each slice (1 % of jobs in the history benchmark), kept 30 days to the succeeded jobs' 7, so
-- the dead letter, read by state, planned and started every slice (its count: 23 ms with 130
-- slices). The slices now hold succeeded jobs only, which retention empties slice by slice, and the
-- maintenance role drops a slice once it is empty.
ALTER TABLE jobs DETACH PARTITION jobs_done;

CREATE TABLE jobs_ended PARTITION OF jobs FOR VALUES IN ('dead', 'cancelled')
  WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
-- Straight between the partitions: the rows are the same jobs, so no trigger of jobs may see them
-- as enqueued or deleted (keys, attempts and the dead letter's counts stay as they are).
INSERT INTO jobs_ended SELECT * FROM jobs_done WHERE state IN ('dead', 'cancelled');
DELETE FROM jobs_done WHERE state IN ('dead', 'cancelled');

-- The check lets the attach skip its own scan of every slice; the partition bound replaces it.
ALTER TABLE jobs_done ADD CONSTRAINT jobs_done_succeeded CHECK (state = 'succeeded');
ALTER TABLE jobs ATTACH PARTITION jobs_done FOR VALUES IN ('succeeded');
ALTER TABLE jobs_done DROP CONSTRAINT jobs_done_succeeded;

ANALYZE jobs;
