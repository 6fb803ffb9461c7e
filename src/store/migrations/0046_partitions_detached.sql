-- Slices detached from jobs_done or from the ledger and not dropped yet. A slice is dropped once the
-- transaction detaching it has committed: its files are removed at the commit of the transaction
-- that drops it, and a slice of a million jobs (187 MB) took ~100 ms there, with jobs_done held and
-- every completion waiting when that was the detaching one. A role stopped between the two leaves
-- the name here; the next pass drops it.
CREATE TABLE partitions_detached (name text PRIMARY KEY);
