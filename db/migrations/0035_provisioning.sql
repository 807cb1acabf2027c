-- Provisioning (issue 50, docs/provisioning.md): a user's name in parts, as SCIM's `name` and OpenID Connect's
-- `given_name` and `family_name` carry it, and the scheme of the stored password.
alter table users add column given_name text;
alter table users add column family_name text;

-- Imported users keep the hash their old system made until their first sign-in rehashes it to the service's own
-- (domain/accounts/password_schemes.ts writes these prefixes). The scheme is read from the hash itself, so that
-- no write of a hash can forget it; the API shows the scheme, never the hash. `argon2id` is the service's own
-- (its exact parameters, domain/accounts/passwords.ts ARGON2); `argon2` any other Argon2 hash.
alter table users add column password_scheme text generated always as (
  case
    when password_hash is null then null
    when starts_with(password_hash, '$argon2id$v=19$m=19456,t=2,p=1$') then 'argon2id'
    when starts_with(password_hash, '$argon2') then 'argon2'
    when starts_with(password_hash, '$2a$') or starts_with(password_hash, '$2b$')
      or starts_with(password_hash, '$2y$') then 'bcrypt'
    when starts_with(password_hash, '$scrypt$') then 'scrypt'
    when starts_with(password_hash, '$pbkdf2-') then 'pbkdf2'
    when starts_with(password_hash, 'pbkdf2_') then 'django_pbkdf2'
    when starts_with(password_hash, '$firebase-scrypt$') then 'firebase_scrypt'
    when starts_with(password_hash, '$sha256-salted$') then 'sha256_salted'
    when starts_with(password_hash, '$sha512-salted$') then 'sha512_salted'
    when starts_with(password_hash, '$md5-salted$') then 'md5_salted'
    else 'unknown'
  end
) stored;
