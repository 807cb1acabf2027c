-- Self-service sign-up per project (domain/signup/signup.ts): "off" (the default), "open", or
-- {"domains": [...]} (only addresses whose domain part is one of these, lower-cased).
alter table projects add column signup jsonb not null default '"off"';
alter table projects add constraint projects__signup check (
  signup = '"off"' or signup = '"open"'
  or (jsonb_typeof(signup) = 'object' and jsonb_typeof(signup -> 'domains') = 'array')
);
