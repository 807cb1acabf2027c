-- A client's own redirect URIs and post-logout redirect URIs. Empty (the default): the project's lists apply;
-- non-empty: that list is the client's, and the project's no longer applies to it (domain/projects/redirect_uris.ts).
-- (Numbered 0020: 0018 and 0019 exist on main, and the migrator tracks versions by number.)
alter table clients
  add column redirect_uris text[] not null default '{}',
  add column post_logout_redirect_uris text[] not null default '{}';
