-- Browsers that signed in to an account (OWASP's device cookies): their failed logins count against a
-- counter of their own, so that guesses from elsewhere cannot keep the account's owner out. Only a hash of
-- the cookie's value is stored. No foreign key to projects: it would lock the project's row on every sign-in.
create table login_devices (
  token_hash bytea not null,
  project_id text not null,
  email text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  constraint login_devices__pkey primary key (token_hash, project_id, email)
);
create index login_devices__expires_at on login_devices (expires_at);
