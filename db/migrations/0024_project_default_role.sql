-- The role self-service sign-up gives a new user (domain/signup/signup.ts): one of the project's roles, or none.
-- A deleted role leaves the project without one, as an identity provider's default role does.
alter table projects add column default_role_id text;
alter table projects add constraint projects__default_role_fkey foreign key (id, default_role_id)
  references roles (project_id, id) on delete set null (default_role_id);
