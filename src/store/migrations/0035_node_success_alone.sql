-- A node success written as one statement outside a transaction (workflowNodeJobsSucceed, `alone`)
-- calls this where it would release a signal node: that release takes more statements than the one
-- (workflow-release.ts, propagate), so the statement fails and keeps nothing, and the completer
-- writes the batch again in a transaction. SQLSTATE TMR01: store/workflow-release.ts tells it apart.
CREATE FUNCTION tidemark_release_needs_transaction(node_id bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'releasing workflow node % takes a transaction', node_id USING ERRCODE = 'TMR01';
END
$$;
