-- Attributes (issue 48): objects, users and clients carry `properties`, a JSON object of at most 4 KB whose
-- top-level keys are identifiers (openapi/fields.ts `Properties` checks both at the edge). Decisions' conditions
-- will read them; the gate's and AuthZEN's statements do not.
alter table objects add column properties jsonb not null default '{}';
alter table users add column properties jsonb not null default '{}';
alter table clients add column properties jsonb not null default '{}';
alter table objects add constraint objects__properties check (jsonb_typeof(properties) = 'object');
alter table users add constraint users__properties check (jsonb_typeof(properties) = 'object');
alter table clients add constraint clients__properties check (jsonb_typeof(properties) = 'object');
