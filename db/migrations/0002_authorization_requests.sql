-- A pending authorization request: what GET /authorize validated, kept server-side so that the login form
-- carries only its id. The CSRF token and the browser's binding cookie are stored as SHA-256 hashes.
create table authorization_requests (
  project_id text not null,
  id text not null,
  client_id text not null,
  redirect_uri text not null,
  code_challenge text not null,
  state text,
  csrf_hash bytea not null,
  browser_hash bytea not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now(),
  constraint authorization_requests__pkey primary key (id),
  constraint authorization_requests__client_fkey foreign key (project_id, client_id)
    references clients (project_id, id) on delete cascade
);
create index authorization_requests__expires_at on authorization_requests (expires_at);

create index authorization_codes__session_id on authorization_codes (session_id);
