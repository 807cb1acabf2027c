-- Second factors: a user's TOTP authenticator (RFC 6238) and recovery codes, the pending second step of a login,
-- and how each login authenticated (RFC 8176 `amr`), carried from the login to its code, browser session and
-- login session so that ID tokens and introspection can say it.

-- One authenticator per user. A row with confirmed_at null is an enrolment under way (it signs nobody in).
-- Exactly one of secret / secret_sealed: sealed with KEY_ENCRYPTION_KEY when the service has one. last_step is
-- the last 30-second step whose code was accepted: a code is good once.
create table totp_factors (
  project_id text not null,
  user_id text not null,
  secret text,
  secret_sealed bytea,
  last_step bigint,
  confirmed_at timestamptz,
  created_at timestamptz not null default now(),
  constraint totp_factors__pkey primary key (project_id, user_id),
  constraint totp_factors__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade,
  constraint totp_factors__secret check ((secret is null) <> (secret_sealed is null))
);

-- Ten per user, shown once: only their SHA-256 hash (salted with the user's id) is kept; each is spent once.
create table recovery_codes (
  project_id text not null,
  user_id text not null,
  code_hash bytea not null,
  used_at timestamptz,
  created_at timestamptz not null default now(),
  constraint recovery_codes__pkey primary key (project_id, user_id, code_hash),
  constraint recovery_codes__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade
);

-- A login whose password was right and whose second factor is awaited: the user, and the methods so far.
alter table authorization_requests add column mfa_user_id text;
alter table authorization_requests add column mfa_amr text[];

-- How the user authenticated, e.g. {pwd}, {pwd,otp,mfa}; null for logins from before this migration.
alter table authorization_codes add column amr text[];
alter table sso_sessions add column amr text[];
alter table sessions add column amr text[];

-- The project's second-factor policy: off (never asked), optional (asked of users who enrolled one), required
-- (users without one enrol right after their password).
alter table projects add column mfa text not null default 'optional';
alter table projects add constraint projects__mfa check (mfa in ('off', 'optional', 'required'));

-- The multi-factor level an OpenID request asked for with acr_values, if it did.
alter table authorization_requests add column acr text;

-- Passkeys: WebAuthn discoverable credentials (id = the credential id, base64url; public_key = its COSE key).
-- sign_count is the authenticator's last counter: one that goes back means a cloned authenticator.
create table passkeys (
  project_id text not null,
  id text not null,
  user_id text not null,
  public_key bytea not null,
  sign_count bigint not null,
  backup_eligible boolean not null,
  backup_state boolean not null,
  name text not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  constraint passkeys__pkey primary key (project_id, id),
  constraint passkeys__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade
);
create index passkeys__user_id on passkeys (project_id, user_id);

-- A registration under way (one per user): its challenge, spent once.
create table passkey_registrations (
  project_id text not null,
  user_id text not null,
  challenge text not null,
  expires_at timestamptz not null,
  constraint passkey_registrations__pkey primary key (project_id, user_id),
  constraint passkey_registrations__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade
);

-- The challenge of a login page's passkey sign-in, spent once, gone with its request.
alter table authorization_requests add column passkey_challenge text;
