-- Signing keys get a lifecycle shared by every instance: next (published, not signing) → current (signs) →
-- previous (published until its tokens expire) → retired (gone); revoked (gone at once, its tokens refused).
-- A private key is stored either as a JWK or, with KEY_ENCRYPTION_KEY, sealed with AES-256-GCM; retired and
-- revoked keys keep neither.
alter table signing_keys
  add column state text not null default 'current'
    constraint signing_keys__state check (state in ('next', 'current', 'previous', 'retired', 'revoked')),
  add column activated_at timestamptz,
  add column retires_at timestamptz,
  add column revoked_at timestamptz,
  add column private_jwk_sealed bytea,
  alter column private_jwk drop not null;

update signing_keys set state = 'retired' where retired_at is not null;
update signing_keys k set
  state = case when k.kid = (select kid from signing_keys where retired_at is null order by created_at desc, kid limit 1)
               then 'current' else 'previous' end,
  activated_at = k.created_at
where k.retired_at is null;
update signing_keys set retires_at = now() + interval '1 day' where state = 'previous';

create unique index signing_keys__one_current on signing_keys (state) where state = 'current';
create unique index signing_keys__one_next on signing_keys (state) where state = 'next';

-- Background jobs (key rotation, purges): one instance holds a job's lease at a time.
create table job_leases (
  name text not null,
  holder text not null,
  expires_at timestamptz not null,
  constraint job_leases__pkey primary key (name)
);
