-- Organizations (issue 49, docs/organizations.md): the customer companies of one project, their members and
-- the organization roles each member holds in each of them.

create table organizations (
  project_id text not null,
  id text not null,
  name text not null,
  description text,
  properties jsonb not null default '{}',
  -- Whether a member must use a second factor: as the project says, or always, or never asked beyond it.
  mfa text not null default 'inherit',
  -- A user signing in with a verified address of one of its domains joins it, with its default roles.
  join_by_domain boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint organizations__pkey primary key (id),
  constraint organizations__project_id_id unique (project_id, id),
  constraint organizations__project_id_fkey foreign key (project_id) references projects (id) on delete cascade,
  constraint organizations__mfa check (mfa in ('inherit', 'optional', 'required')),
  constraint organizations__properties check (jsonb_typeof(properties) = 'object')
);
create unique index organizations__project_id_name on organizations (project_id, lower(name));

-- An organization's email domains, asserted by an admin (lower case; at most one organization per project).
create table organization_domains (
  project_id text not null,
  organization_id text not null,
  domain text not null,
  created_at timestamptz not null default now(),
  constraint organization_domains__pkey primary key (organization_id, domain),
  constraint organization_domains__project_id_domain unique (project_id, domain),
  constraint organization_domains__organization_fkey foreign key (project_id, organization_id)
    references organizations (project_id, id) on delete cascade
);

-- A role is the project's (a user's one role, grants) or an organization's (held by members, in one
-- organization). Fixed when the role is created.
alter table roles add column scope text not null default 'project';
alter table roles add constraint roles__scope check (scope in ('project', 'organization'));

-- The organization roles a member joining by domain (or just in time through the organization's identity
-- provider) is given.
create table organization_default_roles (
  project_id text not null,
  organization_id text not null,
  role_id text not null,
  constraint organization_default_roles__pkey primary key (organization_id, role_id),
  constraint organization_default_roles__organization_fkey foreign key (project_id, organization_id)
    references organizations (project_id, id) on delete cascade,
  constraint organization_default_roles__role_fkey foreign key (project_id, role_id)
    references roles (project_id, id) on delete cascade
);
create index organization_default_roles__role_id on organization_default_roles (role_id);

-- A user of the project who belongs to an organization.
create table organization_members (
  project_id text not null,
  organization_id text not null,
  user_id text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint organization_members__pkey primary key (organization_id, user_id),
  constraint organization_members__project_id_organization_id_user_id unique (project_id, organization_id, user_id),
  constraint organization_members__organization_fkey foreign key (project_id, organization_id)
    references organizations (project_id, id) on delete cascade,
  constraint organization_members__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade
);
create index organization_members__user_id on organization_members (project_id, user_id, organization_id);

-- The organization roles a member holds in that organization.
create table organization_member_roles (
  project_id text not null,
  organization_id text not null,
  user_id text not null,
  role_id text not null,
  constraint organization_member_roles__pkey primary key (organization_id, user_id, role_id),
  constraint organization_member_roles__member_fkey foreign key (project_id, organization_id, user_id)
    references organization_members (project_id, organization_id, user_id) on delete cascade,
  constraint organization_member_roles__role_fkey foreign key (project_id, role_id)
    references roles (project_id, id) on delete cascade
);
create index organization_member_roles__role_id on organization_member_roles (role_id);

-- An object may belong to an organization: its organization roles act on it (and on no other registered
-- object). Deleting the organization leaves the object to the project.
alter table objects add column organization_id text;
alter table objects add constraint objects__organization_fkey foreign key (project_id, organization_id)
  references organizations (project_id, id) on delete set null (organization_id);
create index objects__organization_id on objects (organization_id) where organization_id is not null;

-- A user's login in an organization: asked at /authorize, carried by the code to the refresh tokens (a refresh
-- may switch it) and into each access token as `org_id`.
alter table authorization_requests add column organization_id text;
alter table authorization_codes add column organization_id text;
alter table refresh_tokens add column organization_id text;

-- What a decision in an organization through conditions reads (db/authz/authzen.ts `pendingObject`): what
-- `condition_inputs` (migration 0033) reads, and the organization roles that hold the permission under a
-- condition in the organization asked about (given only when the object belongs to it and no organization role
-- holds the permission outright). A function of its own: decisions asked in no organization call the other one
-- as they did (its subqueries are set up on every call).
create function condition_inputs_org(
  role_id text, permission_id text, role_condition text, subject_properties jsonb, is_user boolean,
  subject_id text, resource_id text, object_id text, grants_live boolean, organization_id text
) returns text language sql stable as $$
  select jsonb_set(jsonb_set(
    condition_inputs(role_id, permission_id, role_condition, subject_properties, is_user, subject_id, resource_id,
                     object_id, grants_live)::jsonb,
    '{pending,organization_id}', to_jsonb(organization_id)),
    '{pending,org_roles}', coalesce((
      select jsonb_agg(jsonb_build_object('role_id', mr.role_id, 'condition', rp.condition) order by mr.role_id)
      from organization_member_roles mr
      join role_permissions rp on rp.role_id = mr.role_id and rp.permission_id = condition_inputs_org.permission_id
      where is_user and mr.organization_id = condition_inputs_org.organization_id
        and mr.user_id = condition_inputs_org.subject_id and rp.condition is not null), 'null'::jsonb))::text
$$;

-- Invitations to join an organization, mailed to an address (the user is created on acceptance when none has
-- it). Only the SHA-256 of the link's token is kept; a resend replaces it. The roles are re-checked when the
-- invitation is accepted: a role deleted since, or no longer an organization role, is not given.
create table organization_invitations (
  project_id text not null,
  id text not null,
  organization_id text not null,
  email text not null,
  role_ids text[] not null default '{}',
  token_hash bytea not null,
  -- How long each mailing's link works (a resend starts it again).
  ttl_seconds int not null,
  expires_at timestamptz not null,
  accepted_at timestamptz,
  accepted_user_id text,
  revoked_at timestamptz,
  sent_count int not null default 1,
  last_sent_at timestamptz not null default now(),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint organization_invitations__pkey primary key (id),
  constraint organization_invitations__project_id_id unique (project_id, id),
  constraint organization_invitations__token_hash unique (token_hash),
  constraint organization_invitations__organization_fkey foreign key (project_id, organization_id)
    references organizations (project_id, id) on delete cascade
);
create index organization_invitations__organization_id on organization_invitations (organization_id, created_at);
-- One invitation waiting per address and organization: a new one replaces it.
create unique index organization_invitations__pending on organization_invitations (organization_id, email)
  where accepted_at is null and revoked_at is null;

-- An upstream identity provider may belong to an organization: its company's own sign-in (docs/organizations.md).
alter table identity_providers add column organization_id text;
alter table identity_providers add constraint identity_providers__organization_fkey
  foreign key (project_id, organization_id) references organizations (project_id, id) on delete cascade;
create index identity_providers__organization_id on identity_providers (organization_id)
  where organization_id is not null;

-- A token of an exchange may be of an organization too (`org_id`): the subject token's, or the one the exchange
-- switched to; it is live only while its user is a member of it (db/authz/principals.ts).
alter table delegated_tokens add column organization_id text;
