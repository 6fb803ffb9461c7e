-- Retention deletes the keys of a slice's jobs by their ids, which the slice's primary key gives
-- alone; found by (queue, key), each batch of 1,000 jobs read the slice's rows for their keys, most
-- of the batch's time when those pages are cold.
CREATE INDEX job_keys_job_idx ON job_keys (job_id);
