-- The device authorization grant (RFC 8628; domain/oauth/device_authorization.ts): a client an admin allows
-- (`device_grant`) asks for a device code, its user enters the user code at /device and signs in there, and the
-- device polls the token endpoint until the user approved or denied.
alter table clients add column device_grant boolean not null default false;

-- One device authorization. Both codes are kept only as SHA-256 hashes (the user code normalised first: eight
-- letters, upper case, no dash). `interval_seconds` grows by 5 at each `slow_down` (RFC 8628 §3.5).
-- The verification page's way through the ordinary login: `browser_hash` and `state_hash` bind it to the browser
-- that entered the user code, `code_verifier` is the PKCE verifier of the login it started (whose
-- `code_challenge` /authorize accepts with the internal redirect URI /device/callback). Once the login's code is
-- redeemed, `user_id`, `session_id` (the session its tokens will open) and `login` (how the user signed in) wait
-- for the user's decision; `status` is then `approved` or `denied`, and `used_at` marks the tokens issued.
create table device_codes (
  project_id text not null,
  id text not null,
  client_id text not null,
  device_code_hash bytea not null,
  user_code_hash bytea not null,
  scope text,
  resource text,
  interval_seconds int not null default 5,
  last_polled_at timestamptz,
  expires_at timestamptz not null,
  browser_hash bytea,
  state_hash bytea,
  code_verifier text,
  code_challenge text,
  confirm_csrf_hash bytea,
  user_id text,
  session_id text,
  login jsonb,
  status text not null default 'pending',
  decided_at timestamptz,
  used_at timestamptz,
  created_at timestamptz not null default now(),
  constraint device_codes__pkey primary key (id),
  constraint device_codes__status check (status in ('pending', 'approved', 'denied')),
  constraint device_codes__client_fkey foreign key (project_id, client_id)
    references clients (project_id, id) on delete cascade,
  constraint device_codes__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade
);
create unique index device_codes__device_code_hash on device_codes (device_code_hash);
-- A user code names one live authorization: a new one that collides is drawn again.
create unique index device_codes__user_code_hash on device_codes (user_code_hash);
create unique index device_codes__state_hash on device_codes (state_hash) where state_hash is not null;
create index device_codes__client on device_codes (project_id, client_id);
create index device_codes__expires_at on device_codes (expires_at);
