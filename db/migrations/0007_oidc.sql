-- OpenID Connect: where a project's applications may send the browser after a logout, single sign-on browser
-- sessions, and what the ID tokens of a login session need (its scopes, when the user authenticated).

alter table projects add column post_logout_redirect_uris text[] not null default '{}';

-- A browser signed in to a project (single sign-on). The cookie names the browser; only its SHA-256 hash is
-- stored, one row per project it signed in to. A session ends at idle_expires_at (moved forward on each use,
-- never past expires_at) or expires_at (absolute), whichever comes first, or when ended_at is set.
create table sso_sessions (
  project_id text not null,
  id text not null,
  browser_hash bytea not null,
  user_id text not null,
  auth_time timestamptz not null,
  idle_expires_at timestamptz not null,
  expires_at timestamptz not null,
  ended_at timestamptz,
  created_at timestamptz not null default now(),
  constraint sso_sessions__pkey primary key (id),
  constraint sso_sessions__project_id_id unique (project_id, id),
  constraint sso_sessions__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade,
  constraint sso_sessions__idle check (idle_expires_at <= expires_at)
);
create index sso_sessions__browser_hash on sso_sessions (browser_hash, project_id);
create index sso_sessions__user_id on sso_sessions (user_id);
create index sso_sessions__expires_at on sso_sessions (expires_at);

-- What the OpenID Connect request asked for travels from the request to the code to the session.
alter table authorization_requests add column scope text;
alter table authorization_requests add column nonce text;

alter table authorization_codes add column scope text;
alter table authorization_codes add column nonce text;
alter table authorization_codes add column auth_time timestamptz;
alter table authorization_codes add column sso_session_id text;
alter table authorization_codes add column ip text;
alter table authorization_codes add column user_agent text;

alter table sessions add column scope text;
alter table sessions add column auth_time timestamptz;
alter table sessions add column sso_session_id text;
alter table sessions add column ip text;
alter table sessions add column user_agent text;
alter table sessions add column last_used_at timestamptz;
update sessions set last_used_at = created_at;
alter table sessions alter column last_used_at set default now();
alter table sessions alter column last_used_at set not null;
alter table sessions add constraint sessions__sso_session_fkey foreign key (project_id, sso_session_id)
  references sso_sessions (project_id, id) on delete set null (sso_session_id);
create index sessions__sso_session_id on sessions (sso_session_id);
