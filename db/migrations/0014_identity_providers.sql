-- Upstream OpenID Connect identity providers per project, the external identities linked to users, and the
-- pending upstream logins (state, nonce and PKCE verifier, kept server-side and spent once).

-- Whether the user's email is known to be theirs: set from the upstream provider's `email_verified` when a
-- user is created by a federated login (`if not exists`: another change may add the same column).
alter table users add column if not exists email_verified boolean not null default false;

create table identity_providers (
  project_id text not null,
  id text not null,
  kind text not null,
  preset text,
  display_name text not null,
  issuer text not null,
  client_id text not null,
  -- Exactly one of these when a secret is set: sealed with KEY_ENCRYPTION_KEY when the service has one.
  client_secret text,
  client_secret_sealed bytea,
  scopes text[] not null,
  claim_email text not null,
  claim_name text not null,
  claim_picture text not null,
  jit_provisioning boolean not null,
  default_role_id text,
  link_by_verified_email boolean not null,
  is_active boolean not null,
  -- The provider's discovery document as validated when saved (or refreshed), and when.
  metadata jsonb not null,
  metadata_fetched_at timestamptz not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint identity_providers__pkey primary key (id),
  constraint identity_providers__project_id_id unique (project_id, id),
  constraint identity_providers__project_id_fkey foreign key (project_id) references projects (id) on delete cascade,
  constraint identity_providers__role_fkey foreign key (project_id, default_role_id)
    references roles (project_id, id) on delete set null (default_role_id),
  constraint identity_providers__kind check (kind in ('oidc')),
  constraint identity_providers__secret check (client_secret is null or client_secret_sealed is null)
);

-- A user's identity at an upstream provider: (provider, upstream `sub`) names one user; a user has at most
-- one identity per provider.
create table external_identities (
  project_id text not null,
  provider_id text not null,
  subject text not null,
  user_id text not null,
  email text,
  created_at timestamptz not null default now(),
  last_login_at timestamptz,
  constraint external_identities__pkey primary key (provider_id, subject),
  constraint external_identities__provider_id_user_id unique (provider_id, user_id),
  constraint external_identities__provider_fkey foreign key (project_id, provider_id)
    references identity_providers (project_id, id) on delete cascade,
  constraint external_identities__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade
);
create index external_identities__user_id on external_identities (project_id, user_id);

-- An upstream login under way: found by the hash of its `state`, bound to the login page's request (and so to
-- the browser's cookie), spent once. It goes with its login request when that is purged.
create table federation_states (
  state_hash bytea not null,
  project_id text not null,
  provider_id text not null,
  request_id text not null,
  nonce text not null,
  code_verifier text not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now(),
  constraint federation_states__pkey primary key (state_hash),
  constraint federation_states__provider_fkey foreign key (project_id, provider_id)
    references identity_providers (project_id, id) on delete cascade,
  constraint federation_states__request_fkey foreign key (request_id)
    references authorization_requests (id) on delete cascade
);
create index federation_states__request_id on federation_states (request_id);

-- The provider a browser session was opened through: its ID tokens say `amr: ["fed"]` and `idp`.
alter table sso_sessions add column provider_id text;
