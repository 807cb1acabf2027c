-- Token exchange (RFC 8693, domain/oauth/grants/token_exchange.ts): a client may act for the users and clients of
-- its project with the permissions of its delegation: `delegation` on (true) with these permissions, else off.
alter table clients add column delegation boolean not null default false;
create table client_delegations (
  project_id text not null,
  client_id text not null,
  permission_id text not null,
  constraint client_delegations__pkey primary key (client_id, permission_id),
  constraint client_delegations__client_fkey foreign key (project_id, client_id)
    references clients (project_id, id) on delete cascade,
  constraint client_delegations__permission_fkey foreign key (project_id, permission_id)
    references permissions (project_id, id) on delete cascade
);
create index client_delegations__permission_id on client_delegations (permission_id);

-- Each token an exchange issued, by its jti: whose it is (the subject, a user through `session_id` or a client;
-- `subject_issued_at`: when the subject token was, against its client's cut-off),
-- who acts (`actors`: the exchanging client first, then those of the subject token's own chain), the tokens it
-- derives from (`ancestors`: revoking any refuses it), what was asked (`permission_ids`: null asks all the
-- intersection; for an API, `resource_id`), and whether the user revoked the agent (`revoked_at`). The gate
-- reads it with every request of such a token, so that every party's change counts at once.
create table delegated_tokens (
  project_id text not null,
  jti text not null,
  subject_type text not null check (subject_type in ('user', 'client')),
  subject_id text not null,
  subject_client_id text not null,
  session_id text,
  subject_issued_at timestamptz not null,
  actors text[] not null,
  ancestors text[] not null,
  permission_ids text[],
  resource_id text,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz,
  constraint delegated_tokens__pkey primary key (jti),
  constraint delegated_tokens__project_fkey foreign key (project_id) references projects (id) on delete cascade
);
-- The agents acting for a user (/account), and their revocation.
create index delegated_tokens__subject on delegated_tokens (project_id, subject_id, expires_at);

-- RFC 8693 §4.4 `may_act`: the one client that may exchange the tokens issued to this client (its users' and its
-- own); null: any client with a delegation. The tokens carry it as their `may_act` claim.
alter table clients add column may_act text;
alter table clients add constraint clients__may_act_fkey foreign key (project_id, may_act)
  references clients (project_id, id) on delete set null (may_act);

-- A user who stopped an agent on /account: no token of theirs issued before `stopped_at` is exchanged by it again
-- (the tokens it already held are revoked in delegated_tokens at the same time).
create table delegation_stops (
  project_id text not null,
  user_id text not null,
  client_id text not null,
  stopped_at timestamptz not null default clock_timestamp(),
  constraint delegation_stops__pkey primary key (project_id, user_id, client_id),
  constraint delegation_stops__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade,
  constraint delegation_stops__client_fkey foreign key (project_id, client_id)
    references clients (project_id, id) on delete cascade
);
