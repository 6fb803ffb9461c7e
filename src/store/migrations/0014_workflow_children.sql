-- Workflow submission, second pass (issue 6): 100,000 nodes and 175,000 edges took 6.9 s to submit
-- on a quiet machine, most of it writing rows and index entries (EXPLAIN ANALYZE, loaded machine:
-- nodes 2.6 s and 40 MB of WAL, edges 2.0 s and 27 MB, drawing ids from the sequence 1.4 s).

-- 1. A node's edges are an array of its children's ids on its own row, not one workflow_edges row
--    (and one primary-key entry) each. Release reads them where it read the edge table's index range
--    by parent: with the parent row, by primary key. The array is written once, at submit, and never
--    updated. Nothing reads edges by child except the paged graph listing, which was already one
--    pass over the workflow's rows.
ALTER TABLE workflow_nodes ADD COLUMN children bigint[];
UPDATE workflow_nodes n SET children = e.children
FROM (SELECT parent_id, array_agg(child_id ORDER BY child_id) AS children FROM workflow_edges GROUP BY parent_id) e
WHERE n.id = e.parent_id;
DROP TABLE workflow_edges;

CREATE OR REPLACE FUNCTION tidemark_workflows_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM workflow_nodes n USING old_workflows w WHERE n.workflow_id = w.id;
  RETURN NULL;
END
$$;

-- 2. The by-state index leaves out 'pending' and 'succeeded': every node is pending when submitted
--    and most end succeeded, and no query looks for those two states through it (counts, cancel and
--    resume read the whole workflow anyway; see workflow-nodes.ts). A submit writes one index entry
--    per node fewer, and each success one fewer.
DROP INDEX workflow_nodes_workflow_state_idx;
CREATE INDEX workflow_nodes_workflow_state_idx ON workflow_nodes (workflow_id, state, key)
  WHERE state NOT IN ('pending', 'succeeded');

-- 3. Node ids are drawn in blocks of 1,024 (one nextval per block: ids v .. v + 1023 belong to the
--    caller), so the submitting process knows every id before it writes, and writes children arrays
--    and roots itself. src/store/workflow-nodes.ts (NODE_ID_BLOCK) must agree with this increment.
ALTER TABLE workflow_nodes ALTER COLUMN id SET INCREMENT BY 1024;
