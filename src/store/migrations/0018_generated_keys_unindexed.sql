-- Keys Tidemark makes for jobs enqueued without one leave the unique key index. A job row is written
-- again at its claim and at its completion, and neither can be a HOT update (the state is in the
-- partial indexes' predicates), so each wrote a new entry for the job's key into
-- jobs_queue_idempotency_key_idx and then cleaned up the index's duplicates (bottom-up deletion):
-- with the index, claim + completion cost 56 µs of PostgreSQL time per job run one at a time, 40 µs
-- without it (PostgreSQL 15, 1,000-job batches, four runs each).
--
-- A generated key is `job-<job id>-<16 hex>` (store/job-key.ts): unique by the id, and across
-- databases by the random part, so it needs no index to be unique, and a generated key sent back as
-- a caller's key finds its job by the id in it. A workflow node's job key,
-- `workflow:<workflow id>:<node id>:<run>`, is unique by construction too and is marked the same way
-- (sent back, it finds the node's current job). Caller keys and the scheduler's occurrence keys stay
-- in the unique index; every row written before this keeps key_generated false, so every key
-- already present still deduplicates.
ALTER TABLE jobs ADD COLUMN key_generated boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX jobs_queue_key_given_idx ON jobs (queue, idempotency_key) WHERE NOT key_generated;
DROP INDEX jobs_queue_idempotency_key_idx;
