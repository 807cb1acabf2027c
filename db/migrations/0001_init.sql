-- The whole data model. Every project-scoped table carries project_id; links between rows are
-- composite foreign keys (project_id, x_id) so that no row can point into another project.
-- Constraints are named table__columns; the API maps unique-constraint names to error codes.

create table projects (
  id text not null,
  name text not null,
  description text,
  redirect_uris text[] not null default '{}',
  is_active boolean not null default true,
  -- Access tokens issued before this instant are refused (set when the project is deactivated).
  tokens_valid_after timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint projects__pkey primary key (id)
);

create table resources (
  project_id text not null,
  id text not null,
  name text not null,
  code text not null,
  description text,
  is_default boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint resources__pkey primary key (id),
  constraint resources__project_id_id unique (project_id, id),
  constraint resources__project_id_fkey foreign key (project_id) references projects (id) on delete cascade
);
create unique index resources__project_id_code on resources (project_id, lower(code));

create table permissions (
  project_id text not null,
  id text not null,
  resource_id text not null,
  name text not null,
  code text not null,
  description text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint permissions__pkey primary key (id),
  constraint permissions__project_id_id unique (project_id, id),
  constraint permissions__resource_fkey foreign key (project_id, resource_id)
    references resources (project_id, id) on delete cascade
);
create unique index permissions__resource_id_code on permissions (resource_id, lower(code));

create table roles (
  project_id text not null,
  id text not null,
  code text not null,
  name text not null,
  description text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint roles__pkey primary key (id),
  constraint roles__project_id_id unique (project_id, id),
  constraint roles__project_id_fkey foreign key (project_id) references projects (id) on delete cascade
);
create unique index roles__project_id_code on roles (project_id, lower(code));

create table role_permissions (
  project_id text not null,
  role_id text not null,
  permission_id text not null,
  constraint role_permissions__pkey primary key (role_id, permission_id),
  constraint role_permissions__role_fkey foreign key (project_id, role_id)
    references roles (project_id, id) on delete cascade,
  constraint role_permissions__permission_fkey foreign key (project_id, permission_id)
    references permissions (project_id, id) on delete cascade
);
create index role_permissions__permission_id on role_permissions (permission_id);

create table users (
  project_id text not null,
  id text not null,
  display_name text not null,
  avatar_url text,
  external_user_id text,
  email text,
  password_hash text,
  role_id text,
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint users__pkey primary key (id),
  constraint users__project_id_id unique (project_id, id),
  constraint users__project_id_fkey foreign key (project_id) references projects (id) on delete cascade,
  constraint users__role_fkey foreign key (project_id, role_id)
    references roles (project_id, id) on delete set null (role_id),
  constraint users__identity check (email is not null or external_user_id is not null)
);
create unique index users__project_id_email on users (project_id, email);
create unique index users__project_id_external_user_id on users (project_id, external_user_id);
create index users__role_id on users (project_id, role_id);

create table clients (
  project_id text not null,
  id text not null,
  name text not null,
  description text,
  secret_hash bytea not null,
  is_active boolean not null default true,
  -- The project's admin client, created with it: it can be neither deactivated nor stripped of permissions.
  is_admin boolean not null default false,
  -- Access tokens issued before this instant are refused (set on deactivation and on secret rotation).
  tokens_valid_after timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint clients__pkey primary key (id),
  constraint clients__project_id_id unique (project_id, id),
  constraint clients__project_id_fkey foreign key (project_id) references projects (id) on delete cascade
);

create table client_permissions (
  project_id text not null,
  client_id text not null,
  permission_id text not null,
  constraint client_permissions__pkey primary key (client_id, permission_id),
  constraint client_permissions__client_fkey foreign key (project_id, client_id)
    references clients (project_id, id) on delete cascade,
  constraint client_permissions__permission_fkey foreign key (project_id, permission_id)
    references permissions (project_id, id) on delete cascade
);
create index client_permissions__permission_id on client_permissions (permission_id);

-- Ed25519 signing keys, shared by every instance; the newest unretired one signs.
create table signing_keys (
  kid text not null,
  alg text not null,
  public_jwk jsonb not null,
  private_jwk jsonb not null,
  created_at timestamptz not null default now(),
  retired_at timestamptz,
  constraint signing_keys__pkey primary key (kid)
);

-- A login of a user through a client; every refresh token and user access token belongs to one.
create table sessions (
  project_id text not null,
  id text not null,
  user_id text not null,
  client_id text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz,
  constraint sessions__pkey primary key (id),
  constraint sessions__project_id_id unique (project_id, id),
  constraint sessions__user_fkey foreign key (project_id, user_id) references users (project_id, id) on delete cascade,
  constraint sessions__client_fkey foreign key (project_id, client_id)
    references clients (project_id, id) on delete cascade
);
create index sessions__user_id on sessions (user_id);

-- Codes are stored only as SHA-256 hashes and consumed by one conditional update.
create table authorization_codes (
  project_id text not null,
  code_hash bytea not null,
  client_id text not null,
  user_id text not null,
  redirect_uri text not null,
  code_challenge text not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  session_id text,
  created_at timestamptz not null default now(),
  constraint authorization_codes__pkey primary key (code_hash),
  constraint authorization_codes__client_fkey foreign key (project_id, client_id)
    references clients (project_id, id) on delete cascade,
  constraint authorization_codes__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade
);

-- Refresh tokens, stored only as SHA-256 hashes; each is spent by one conditional update.
create table refresh_tokens (
  project_id text not null,
  token_hash bytea not null,
  session_id text not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now(),
  constraint refresh_tokens__pkey primary key (token_hash),
  constraint refresh_tokens__session_fkey foreign key (project_id, session_id)
    references sessions (project_id, id) on delete cascade
);
create index refresh_tokens__session_id on refresh_tokens (session_id);

-- Access tokens revoked before their expiry (RFC 7009); rows past expires_at can be purged.
create table revoked_access_tokens (
  jti text not null,
  project_id text not null,
  expires_at timestamptz not null,
  constraint revoked_access_tokens__pkey primary key (jti),
  constraint revoked_access_tokens__project_id_fkey foreign key (project_id)
    references projects (id) on delete cascade
);

-- Failed logins, per account and per client address, so that every instance throttles alike.
create table login_failures (
  key text not null,
  failures integer not null default 0,
  window_started_at timestamptz not null default now(),
  last_failed_at timestamptz not null default now(),
  previous_failed_at timestamptz,
  constraint login_failures__pkey primary key (key)
);
