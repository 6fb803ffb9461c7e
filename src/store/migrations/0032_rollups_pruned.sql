-- The lateness rollups and the queues' audit trail are pruned by age too (retention.rollups and
-- retention.audit, 400 days by default): occurrence_days gains a row per schedule and day, 11
-- million a year at 30,000 schedules, and nothing deleted them. The indexes let a batch read its
-- oldest rows without a scan.
CREATE INDEX occurrence_days_day_idx ON occurrence_days (day);
CREATE INDEX queue_changes_at_idx ON queue_changes (at);
INSERT INTO retention_counts (table_name) VALUES ('occurrence_minutes'), ('occurrence_days'), ('queue_changes');
