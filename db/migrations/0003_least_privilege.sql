-- Round 2 security: how a client authenticates at the token endpoint (RFC 7591's name), and an absolute
-- lifetime for login sessions that refreshing cannot extend.
alter table clients add column token_endpoint_auth_method text not null default 'none'
  constraint clients__token_endpoint_auth_method check (token_endpoint_auth_method in ('none', 'client_secret_basic'));

-- The service always sets it from SESSION_MAX_TTL; the default covers sessions from before this migration.
alter table sessions add column max_expires_at timestamptz not null default now() + interval '30 days';
update sessions set max_expires_at = created_at + interval '30 days';
-- A session already past its new absolute end ends now, rather than refreshing once more.
update sessions set expires_at = least(expires_at, max_expires_at);

-- Deactivating a client ends the sessions of users who signed in through it.
create index sessions__client_id on sessions (client_id);
