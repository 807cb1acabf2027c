-- Conditions (issue 48): a CEL expression a role attaches to one of its permissions, or a grant carries, that a
-- decision must find true (domain/authz/conditions.ts parses and type-checks it when written). Null: none.
alter table role_permissions add column condition text;
alter table object_grants add column condition text;
alter table role_permissions add constraint role_permissions__condition check (length(condition) <= 1000);
alter table object_grants add constraint object_grants__condition check (length(condition) <= 1000);

-- Whether the client's decisions (AuthZEN) carry `context.reason_admin`: a policy enforcement point that must
-- not learn the model's ids, or a conformance harness comparing answers exactly, turns them off.
alter table clients add column decision_reasons boolean not null default true;
