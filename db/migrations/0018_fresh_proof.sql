-- Fresh proof for changing sign-in methods (factors, password, email) on the account page. A user without a
-- password proves themselves by signing in again at their linked provider: that round trip has no login request
-- but the browser session it freshens, and the user it must come back as. It goes with that session.
alter table federation_states alter column request_id drop not null;
alter table federation_states add column reauth_session_id text;
alter table federation_states add column user_id text;
alter table federation_states add constraint federation_states__reauth_fkey foreign key (reauth_session_id)
  references sso_sessions (id) on delete cascade;
alter table federation_states add constraint federation_states__purpose
  check ((request_id is null) <> (reauth_session_id is null) and ((reauth_session_id is null) = (user_id is null)));
create index federation_states__reauth_session_id on federation_states (reauth_session_id);

-- When the browser session's user last signed in again at their provider for the account page: changes of
-- sign-in methods there accept it for a few minutes (domain/factors/proof.ts).
alter table sso_sessions add column reauthenticated_at timestamptz;
