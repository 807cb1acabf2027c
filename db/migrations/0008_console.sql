-- The admin console (/console): a built-in public client in every project, which signs users in through the
-- service's own authorization code + PKCE flow; its redirect URI is built in (PUBLIC_URL/console/callback),
-- so no project lists it. It is hidden from the clients API, holds no permissions and has no usable secret.
alter table clients add column is_console boolean not null default false;
insert into clients (project_id, id, name, description, secret_hash, is_console, token_endpoint_auth_method)
select p.id, 'console-' || p.id, 'Console', 'Built in: the admin console signs users in with it',
       sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), true, 'none'
from projects p
on conflict do nothing;

-- A signed-in console: the cookie's value is never stored, only its SHA-256; the user's tokens are sealed
-- (AES-GCM) with a key derived from that value, so the rows alone give nobody a usable token.
create table console_sessions (
  id_hash bytea not null,
  project_id text not null,
  sealed bytea not null,
  access_expires_at timestamptz not null,
  expires_at timestamptz not null,
  -- Set while one request refreshes the tokens, so that parallel requests do not spend the refresh token twice.
  refreshing_until timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint console_sessions__pkey primary key (id_hash),
  constraint console_sessions__project_id_fkey foreign key (project_id) references projects (id) on delete cascade
);
create index console_sessions__expires_at on console_sessions (expires_at);

-- The first operator's one-time setup link (BOOTSTRAP_ADMIN_EMAIL without BOOTSTRAP_ADMIN_PASSWORD): a hash.
create table console_setup_tokens (
  token_hash bytea not null,
  project_id text not null,
  user_id text not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  constraint console_setup_tokens__pkey primary key (token_hash),
  constraint console_setup_tokens__project_id_fkey foreign key (project_id) references projects (id) on delete cascade
);
