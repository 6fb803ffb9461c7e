-- Listing workflows newest first, all of them (admin) or one tenant's, a page at a time: each page is
-- one index range from the cursor (created_at, id) instead of a sort of the whole table.
DROP INDEX workflows_tenant_created_idx;
CREATE INDEX workflows_tenant_created_idx ON workflows (tenant_id, created_at DESC, id DESC);
CREATE INDEX workflows_created_idx ON workflows (created_at DESC, id DESC);
