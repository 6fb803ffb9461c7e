-- The dashboard's history reads jobs by finish time (historyThroughputPerMinute,
-- historyBacklogPerMinute) through a B-tree instead of 0024's BRIN index. A BRIN range is only as
-- narrow as the rows on its pages are close in time, and on a table that keeps its history they are
-- not: a new row version goes to whatever page the free space map offers, and a table whose pages
-- each have a row's worth of space left spreads one drain's 50,000 jobs over 9,000 pages of week-old
-- history (10 times the pages the same jobs take on a fresh table). Each such page's range then
-- covers a week, and "finished in the last hour" read 19,000 pages, 2.5 s beside 2 million jobs of
-- history, where a B-tree reads the hour's rows.
--
-- Only finished jobs are in it, so the claim writes no entry; a completion writes one, at the index's
-- right edge: a 50,000-job drain's PostgreSQL time was within the noise of the same drain without it
-- (5 alternating runs each, medians 2.05 and 2.03 s), and the BRIN index it replaces was updated by
-- every row version that landed in a range it widened. It costs ~25 bytes per finished job on disk
-- (the BRIN index cost next to nothing); carrying state, queue and tenant_id as well (58 bytes)
-- would only spare heap reads on pages vacuum has marked all-visible, which the last hour's are not.
CREATE INDEX jobs_finished_idx ON jobs (finished_at) WHERE state IN ('succeeded', 'dead', 'cancelled');
DROP INDEX jobs_finished_brin;
