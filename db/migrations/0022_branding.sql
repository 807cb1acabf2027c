-- A project's branding (docs/branding.md): the name, colour and links the pages its users see carry, and its
-- logo, served from this service's origin. (Numbered 0022: 0018 to 0021 are taken on other branches, and the
-- migrator tracks versions by number.)
alter table projects
  add column branding_display_name text,
  add column branding_primary_color text,
  add column branding_terms_url text,
  add column branding_privacy_url text;

-- One logo per project, checked before it is stored (domain/projects/branding.ts); `sha256` versions its URL.
create table project_logos (
  project_id text not null,
  content_type text not null,
  image bytea not null,
  sha256 text not null,
  updated_at timestamptz not null default now(),
  constraint project_logos__pkey primary key (project_id),
  constraint project_logos__project_id_fkey foreign key (project_id) references projects (id) on delete cascade,
  constraint project_logos__content_type check (content_type in ('image/png', 'image/webp', 'image/svg+xml')),
  constraint project_logos__image check (octet_length(image) <= 102400)
);
