-- API: bearer tokens. Only a SHA-256 of each token is stored, so a leaked table grants nothing; the
-- token itself is shown once, at creation. A token with no tenant is an admin token.

CREATE TABLE api_tokens (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- NULL: admin (every tenant, tenant and queue administration, token management).
  tenant_id    text REFERENCES tenants (id),
  name         text NOT NULL,
  hash         bytea NOT NULL UNIQUE CHECK (length(hash) = 32),
  -- Requests per second this token may make (a token bucket of twice this burst); NULL: server default.
  rate_per_s   integer CHECK (rate_per_s > 0),
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);
CREATE INDEX api_tokens_tenant_idx ON api_tokens (tenant_id) WHERE revoked_at IS NULL;
