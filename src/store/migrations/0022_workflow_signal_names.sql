-- A signal is refused unless a node of its workflow declares its name, so every signal reads the
-- workflow's signal names. Partial: only signal nodes get an entry, so submitting job nodes writes
-- nothing more, and the read is one short index range even in a workflow of 100,000 nodes.
CREATE INDEX workflow_nodes_signal_idx ON workflow_nodes (workflow_id, signal_name)
  WHERE signal_name IS NOT NULL;
