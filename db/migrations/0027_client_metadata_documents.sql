-- Client ID Metadata Documents (domain/oauth/client_metadata.ts): a client whose `client_id` is an https URL is
-- described by the JSON document at that URL. Each project decides whether it admits them: "off" (the default),
-- "any", or {"hosts": [...]} (only documents on these hosts, lower-cased).
alter table projects add column client_metadata_documents jsonb not null default '"off"';
alter table projects add constraint projects__client_metadata_documents check (
  client_metadata_documents = '"off"' or client_metadata_documents = '"any"'
  or (jsonb_typeof(client_metadata_documents) = 'object'
      and jsonb_typeof(client_metadata_documents -> 'hosts') = 'array')
);

-- Such a client is recorded on its first use as a row of its project, with an id of ours: `metadata_url` is the
-- URL it presents, `metadata_expires_at` when its document must be fetched again (its name and redirect URIs are
-- the document's), `last_used_at` its last authorization or token request. Blocking it is `is_active = false`.
alter table clients add column metadata_url text, add column metadata_expires_at timestamptz,
  add column last_used_at timestamptz;
-- One row per URL and project; the token endpoint finds a URL's rows by the URL.
create unique index clients__metadata_url on clients (metadata_url, project_id) where metadata_url is not null;
