-- SCIM tokens (docs/provisioning.md § The client and its token): long-lived bearer tokens of a client for
-- /scim/v2/{project_id}/ only. Entra ID's "Secret Token" and Okta's "HTTP Header" authentication send one fixed
-- token and never fetch another, so a 15-minute access token would stop them. Only the token's SHA-256 is
-- kept. A token acts with its client's permissions now, while the client and project are active, until it
-- expires or is revoked; rotating the client's secret or deactivating it refuses the tokens made before.
create table scim_tokens (
  project_id text not null,
  id text not null,
  client_id text not null,
  token_hash bytea not null,
  description text,
  created_at timestamptz not null default now(),
  expires_at timestamptz,
  last_used_at timestamptz,
  constraint scim_tokens__pkey primary key (id),
  constraint scim_tokens__token_hash unique (token_hash),
  constraint scim_tokens__client_fkey foreign key (project_id, client_id)
    references clients (project_id, id) on delete cascade
);
create index scim_tokens__client on scim_tokens (project_id, client_id);
