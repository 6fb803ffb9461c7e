-- A leader's fenced write locks its lease row FOR KEY SHARE for the length of the write. A takeover
-- changes the epoch and must wait for that write to commit; a renewal changes only the expiry and
-- must not (under load a 2,500-row write held renewals back ~0.5–1.5 s, and a renewal that waits
-- out the term ends a healthy leader). PostgreSQL lets an UPDATE past a key-share lock only when it
-- changes no "key" column, i.e. no column of a unique index: this index makes epoch one.
CREATE UNIQUE INDEX leases_name_epoch_key ON leases (name, epoch);
