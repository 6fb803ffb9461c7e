-- Workflows (issue 6): a DAG of nodes stored as rows. Each node carries the number of its
-- dependencies that have not yet succeeded; the transaction that records a node's success decrements
-- its children (found through workflow_edges by parent) and enqueues those that reach zero. Nothing
-- about a running workflow lives in memory, and every step is an index lookup, whatever its size.

CREATE TABLE workflows (
  id                text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 200),
  tenant_id         text NOT NULL REFERENCES tenants (id),
  name              text NOT NULL,
  state             text NOT NULL DEFAULT 'running'
                    CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
  failure_policy    text NOT NULL CHECK (failure_policy IN ('fail_fast', 'continue')),
  -- SHA-256 of the canonical definition: the same id submitted again is a no-op only if this matches.
  definition_sha256 text NOT NULL,
  node_count        integer NOT NULL CHECK (node_count > 0),
  -- Nodes not yet succeeded, failed, skipped or cancelled. The transaction that takes it to zero
  -- ends the workflow, so the end is decided once, under this row's lock.
  unfinished        integer NOT NULL CHECK (unfinished >= 0),
  failed_nodes      integer NOT NULL DEFAULT 0 CHECK (failed_nodes >= 0),
  -- Bumped by every resume; part of each new job's idempotency key (workflow_id:node:generation).
  generation        integer NOT NULL DEFAULT 1,
  -- The node that succeeded last: where the critical path so far ends.
  last_succeeded_node bigint,
  error             text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  finished_at       timestamptz,
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workflows_tenant_created_idx ON workflows (tenant_id, created_at);

CREATE TABLE workflow_nodes (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workflow_id    text NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
  key            text NOT NULL,
  type           text NOT NULL CHECK (type IN ('job', 'signal')),
  -- pending: dependencies unfinished (or held back by a failed/cancelled workflow);
  -- queued: its job exists (available, running or waiting for a retry); waiting: a signal node
  -- released and waiting for its signal; skipped: downstream of a failed node under 'continue'.
  state          text NOT NULL DEFAULT 'pending'
                 CHECK (state IN ('pending', 'queued', 'waiting', 'succeeded', 'failed', 'skipped', 'cancelled')),
  -- Dependencies not yet succeeded. Kept exact in every workflow state (a success always decrements),
  -- so resume only has to release the nodes at zero.
  pending_deps   integer NOT NULL CHECK (pending_deps >= 0),
  queue          text,
  kind           text,
  payload        jsonb,
  priority       integer NOT NULL DEFAULT 0,
  max_attempts   integer NOT NULL DEFAULT 4 CHECK (max_attempts > 0),
  timeout_ms     integer CHECK (timeout_ms > 0),
  signal_name    text,
  signal_timeout_ms integer CHECK (signal_timeout_ms > 0),
  on_timeout     text CHECK (on_timeout IN ('fail', 'default')),
  default_output jsonb,
  -- The node's current job (the latest run's). No foreign key: job history may be pruned on its own
  -- schedule, and a check per completion would cost a lookup for nothing.
  job_id         bigint,
  -- Jobs created for this node so far: 1 normally, more after resumes that ran it again.
  runs           integer NOT NULL DEFAULT 0,
  -- The parent whose success released this node (its last dependency to finish): the critical-path link.
  released_by    bigint,
  waiting_until  timestamptz,
  output         jsonb,
  error          text,
  released_at    timestamptz,
  finished_at    timestamptz,
  UNIQUE (workflow_id, key),
  CHECK ((type = 'job') = (kind IS NOT NULL AND queue IS NOT NULL)),
  CHECK ((type = 'signal') = (signal_name IS NOT NULL))
);
CREATE UNIQUE INDEX workflow_nodes_job_idx ON workflow_nodes (job_id) WHERE job_id IS NOT NULL;
-- Counts per state, the nodes a cancel or resume touches, and paged listings filtered by state.
CREATE INDEX workflow_nodes_workflow_state_idx ON workflow_nodes (workflow_id, state, key);
CREATE INDEX workflow_nodes_waiting_idx ON workflow_nodes (waiting_until)
  WHERE state = 'waiting' AND waiting_until IS NOT NULL;
-- Each completion batch of a large workflow updates many node rows more than once (decrement,
-- release, success); leave room on the page for HOT updates and vacuum often.
ALTER TABLE workflow_nodes SET (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02);

-- Edges by parent: release reads a finished node's children with one index range each. No foreign
-- keys: both ends are written by the same statement that creates the nodes, and a trigger per row
-- would double the cost of submitting 100,000 nodes.
CREATE TABLE workflow_edges (
  parent_id bigint NOT NULL,
  child_id  bigint NOT NULL,
  PRIMARY KEY (parent_id, child_id)
);

-- Signals received, one row per (workflow, name): a signal sent twice counts once.
CREATE TABLE workflow_signals (
  workflow_id text NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
  name        text NOT NULL,
  payload     jsonb NOT NULL DEFAULT 'null',
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workflow_id, name)
);
