-- A resource may be an API with a resource indicator (RFC 8707): an absolute URI, unique across the service,
-- which tokens asked for it carry as `aud` (domain/oauth/resource_indicators.ts).
alter table resources add column indicator text;
create unique index resources__indicator on resources (indicator) where indicator is not null;

-- The document gains `indicator` after `description` (same definition otherwise as in 0011).
create or replace function resource_document(r resources) returns text language plpgsql as $$
declare
  d text;
begin
  select row_to_json(x)::text into d from (
    select r.id, r.project_id, r.name, r.code, r.description, r.indicator, r.is_default,
           coalesce((
             select '[' || string_agg(row_to_json(p)::text, ',' order by lower(p.code), p.id) || ']'
             from (
               select pe.id, pe.name, pe.code, pe.description,
                      to_char(pe.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
                      to_char(pe.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at
               from permissions pe where pe.resource_id = r.id) p
           ), '[]')::json as permissions,
           to_char(r.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
           to_char(r.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at) x;
  return d;
end $$;

-- Stored documents lack the new field: forget them without computing them here (reads compute a missing one,
-- and the leased job `resource-documents` writes them again, a few hundred rows at a time, as after 0011).
alter table resources disable trigger resources__document;
update resources set doc = null where doc is not null;
alter table resources enable trigger resources__document;

-- The API an authorization asked for (`resource`, RFC 8707) and the scope it asked, carried from the login
-- page's request to its code and to the session, whose refreshes keep to it.
alter table authorization_requests add column resource text, add column resource_scope text;
alter table authorization_codes add column resource text, add column resource_scope text;
alter table sessions add column resource text, add column resource_scope text;
