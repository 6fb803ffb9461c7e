-- The occurrence ledger is the record of what ran and when ("did the 09:00 run happen, how late"); it
-- must not vanish with the schedule (it did: ON DELETE CASCADE). Without the foreign key an occurrence
-- keeps its schedule's id after a delete, as its job does (jobs.schedule_id never had one), and the
-- leader's writes skip a per-row key check; they already join schedules, so nothing is written for
-- a schedule that is gone.
ALTER TABLE occurrences DROP CONSTRAINT occurrences_schedule_id_fkey;
