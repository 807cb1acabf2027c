-- Consent for third-party clients (domain/signin/consent.ts): an admin marks a client `third_party`; its users
-- then see a consent page before the first code, and the decision is kept per user, client and API.
alter table clients add column third_party boolean not null default false;

-- What a user granted a client: for one API (a resource with an indicator) or, without one, for the project
-- (resource_id null). `permissions`: the permission codes (or, for the project, the OpenID scopes) granted.
create table consents (
  project_id text not null,
  id text not null,
  user_id text not null,
  client_id text not null,
  resource_id text,
  permissions text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint consents__pkey primary key (id),
  constraint consents__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade,
  constraint consents__client_fkey foreign key (project_id, client_id)
    references clients (project_id, id) on delete cascade,
  constraint consents__resource_fkey foreign key (project_id, resource_id)
    references resources (project_id, id) on delete cascade
);
-- One decision per user, client and API; null (the project) counts as one key.
create unique index consents__user_client_resource on consents (project_id, user_id, client_id, coalesce(resource_id, ''));
-- For the cascades when a client or a resource is deleted.
create index consents__client on consents (project_id, client_id);
create index consents__resource on consents (project_id, resource_id) where resource_id is not null;

-- A login page waiting for the user's consent: who signed in, how (RFC 8176 `amr`) and through which provider;
-- `consent_sso`: the user came by single sign-on (approving goes back to /authorize, which uses the session).
alter table authorization_requests add column consent_user_id text, add column consent_amr text[],
  add column consent_provider_id text, add column consent_sso boolean not null default false;
