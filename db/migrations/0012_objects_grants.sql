-- Objects of a resource and roles granted on them (docs/objects-and-grants.md).
--
-- An object is the application's own id within one resource (unique per resource), with an optional parent of
-- the same resource. Ids are compared byte-wise (collate "C"), so that the primary key's order is the order of
-- keyset pages: a page of objects after a key is an index range scan, however many there are.
create table objects (
  project_id text not null,
  resource_id text not null,
  id text collate "C" not null,
  name text,
  parent_id text collate "C",
  -- 1 for an object without parent; at most 32.
  depth int not null,
  -- The objects of its subtree, itself included: a resource search through a grant counts its results from
  -- the granted objects' sizes instead of reading every object they reach.
  size int not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint objects__pkey primary key (resource_id, id),
  constraint objects__resource_fkey foreign key (project_id, resource_id)
    references resources (project_id, id) on delete cascade,
  constraint objects__parent_fkey foreign key (resource_id, parent_id) references objects (resource_id, id),
  constraint objects__depth check (depth between 1 and 32)
);
create index objects__resource_id_parent_id on objects (resource_id, parent_id, id);
create index objects__project_id on objects (project_id);

-- How many objects each resource has: a resource search's total for a subject holding the permission
-- project-wide, without counting them. Written with the objects (their writes to one resource take turns).
create table object_counts (
  resource_id text not null,
  n bigint not null,
  constraint object_counts__pkey primary key (resource_id),
  constraint object_counts__resource_fkey foreign key (resource_id) references resources (id) on delete cascade
);

-- Every object's ancestors, itself included (depth 0), as a closure table: the ancestors of one object are one
-- index range (a decision through a grant: a few probes, however deep), the descendants of one object another
-- (a page of resource search through a grant: an ordered range scan per grant, whatever the subtree's size).
-- Written with the objects, in their transaction.
create table object_paths (
  resource_id text not null,
  object_id text collate "C" not null,
  ancestor_id text collate "C" not null,
  depth int not null,
  constraint object_paths__pkey primary key (resource_id, object_id, ancestor_id),
  constraint object_paths__object_fkey foreign key (resource_id, object_id)
    references objects (resource_id, id) on delete cascade,
  constraint object_paths__ancestor_fkey foreign key (resource_id, ancestor_id)
    references objects (resource_id, id) on delete cascade
);
create index object_paths__resource_id_ancestor_id on object_paths (resource_id, ancestor_id, object_id);

-- A role given to one user or client on one object (and its descendants), until `expires_at` (the database's
-- clock decides). It carries only the role's permissions of the object's resource. Deleting the subject, the
-- role or the object deletes the grant.
create table object_grants (
  project_id text not null,
  id text not null,
  user_id text,
  client_id text,
  subject_id text generated always as (coalesce(user_id, client_id)) stored,
  role_id text not null,
  resource_id text not null,
  object_id text collate "C" not null,
  expires_at timestamptz,
  created_at timestamptz not null default now(),
  created_by_type text not null,
  created_by_id text,
  constraint object_grants__pkey primary key (id),
  constraint object_grants__project_id_id unique (project_id, id),
  constraint object_grants__subject check ((user_id is null) <> (client_id is null)),
  constraint object_grants__user_fkey foreign key (project_id, user_id)
    references users (project_id, id) on delete cascade,
  constraint object_grants__client_fkey foreign key (project_id, client_id)
    references clients (project_id, id) on delete cascade,
  constraint object_grants__role_fkey foreign key (project_id, role_id)
    references roles (project_id, id) on delete cascade,
  constraint object_grants__object_fkey foreign key (resource_id, object_id)
    references objects (resource_id, id) on delete cascade,
  constraint object_grants__resource_fkey foreign key (project_id, resource_id)
    references resources (project_id, id) on delete cascade
);
-- A decision: the grants of one subject on one object (each ancestor of the object is one probe).
create index object_grants__object_subject on object_grants (resource_id, object_id, subject_id);
-- A resource search: the grants of one subject on one resource.
create index object_grants__subject_resource on object_grants (project_id, subject_id, resource_id);
create index object_grants__role_id on object_grants (role_id);
create index object_grants__expires_at on object_grants (expires_at) where expires_at is not null;
