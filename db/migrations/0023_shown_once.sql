-- A client secret the console shows once, after the post that made it redirects to its page (post, redirect,
-- get): kept a few minutes under the hash of a random key, bound to the hash of the console session's cookie,
-- and spent at the first read, in the database so that the redirect may land on any instance. The secret is
-- sealed with KEY_ENCRYPTION_KEY when it is set.
create table console_shown_once (
  key_hash bytea not null,
  owner_hash bytea not null,
  client_id text not null,
  secret text,
  secret_sealed bytea,
  shown_at timestamptz,
  expires_at timestamptz not null,
  constraint console_shown_once__pkey primary key (key_hash)
);
create index console_shown_once__expires_at on console_shown_once (expires_at);
