-- The dashboard's history (GET /v1/history): jobs finished and attempts failed per minute over the
-- last hours, read by finish time. BRIN indexes, as for occurrences' fire times (0021): a finish
-- time is close to the time its row version was written, so page ranges summarise tightly, and a
-- BRIN entry changes only when a row lands in an already summarised range outside its bounds,
-- where a B-tree would add an entry to every completion (a quarter of a completion's cost was one
-- extra index entry and heap tuple, 0019).
CREATE INDEX jobs_finished_brin ON jobs USING brin (finished_at) WITH (autosummarize = on);
-- Attempts are few and small beside jobs: at the default 128 pages a range, 6,500 attempts were one
-- range and the planner read the table whole; 32 keeps a window's read to its own ranges.
CREATE INDEX job_attempts_finished_brin ON job_attempts USING brin (finished_at) WITH (autosummarize = on, pages_per_range = 32);
