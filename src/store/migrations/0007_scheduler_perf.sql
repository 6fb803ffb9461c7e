-- Scheduler follow-ups (issue 4): broken schedules leave the due set; cheaper materialisation.

-- A stored spec that no longer compiles (e.g. a time zone dropped from the host's tz data) cannot be
-- planned. The leader records why here and clears next_fire_at, so the schedule leaves the due set
-- (schedules_due_idx, the heap's load) instead of being popped and skipped on every tick; the next
-- edit recomputes next_fire_at and clears this.
ALTER TABLE schedules ADD COLUMN spec_error text;
