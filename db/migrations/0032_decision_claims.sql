-- Claims from decisions (issue 48, the AuthZEN IdP scenario): up to 3 searches whose answers go into the client's
-- users' tokens, each {"claim", "resource_type", "action"} (domain/oauth/decision_claims.ts checks them when
-- written: names, codes of the project, who may set them). Empty: none.
alter table clients add column decision_claims jsonb not null default '[]';
alter table clients add constraint clients__decision_claims
  check (jsonb_typeof(decision_claims) = 'array' and jsonb_array_length(decision_claims) <= 3);
