-- Email: whether a user's address is proven, one-time links mailed to users, and the outbox of mails.
alter table users add column email_verified boolean not null default false;
-- A verified address stays until its replacement is verified too: the new one waits here.
alter table users add column pending_email text;
-- A project may refuse logins until the user's address is verified.
alter table projects add column require_verified_email boolean not null default false;
-- The login page whose user must verify their address first: its page offers to mail the link again.
alter table authorization_requests add column unverified_user_id text;

-- One-time links (password reset, invitation, email verification): only the SHA-256 of the token is kept. A
-- link is good once, until `expires_at`, for the address it was sent to, and while the user's password is the
-- one it was issued under (`password_stamp`, the SHA-256 of the password hash then): a password set by any path
-- kills every link issued before.
create table account_links (
  project_id text not null,
  id text not null,
  user_id text not null,
  purpose text not null
    constraint account_links__purpose check (purpose in ('password_reset', 'invitation', 'email_verification')),
  token_hash bytea not null,
  email text not null,
  password_stamp text not null,
  -- The login page the reset was asked from: setting the password continues it.
  authorization_request_id text,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now(),
  constraint account_links__pkey primary key (id),
  constraint account_links__token_hash unique (token_hash),
  constraint account_links__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade
);
create index account_links__user on account_links (project_id, user_id, purpose);
create index account_links__expires_at on account_links (expires_at);

-- The outbox: a mail is written in the transaction that asks for it and sent by a worker of any instance
-- (SKIP LOCKED), retried with backoff; the one-time link it carries is kept (sealed under KEY_ENCRYPTION_KEY
-- when set) only until the mail is sent or given up.
create table mail_outbox (
  project_id text not null,
  id text not null,
  kind text not null,
  to_address text not null,
  user_id text,
  params jsonb not null,
  link text,
  link_sealed bytea,
  status text not null default 'pending'
    constraint mail_outbox__status check (status in ('pending', 'sending', 'sent', 'failed')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  locked_until timestamptz,
  last_error text,
  sent_at timestamptz,
  created_at timestamptz not null default now(),
  constraint mail_outbox__pkey primary key (id),
  constraint mail_outbox__project_id_fkey foreign key (project_id) references projects (id) on delete cascade
);
create index mail_outbox__due on mail_outbox (next_attempt_at) where status in ('pending', 'sending');
create index mail_outbox__created_at on mail_outbox (created_at);
create index mail_outbox__user_id on mail_outbox (project_id, user_id);
