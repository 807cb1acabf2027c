-- The audit trail: one row per change or security fact, written in the transaction of the change.
create table audit_events (
  project_id text not null,
  id text not null,
  occurred_at timestamptz not null default now(),
  type text not null,
  actor_type text not null constraint audit_events__actor_type check (actor_type in ('client', 'user', 'system')),
  actor_id text,
  actor_token_jti text,
  request_id text,
  request_ip text,
  request_user_agent text,
  target_type text,
  target_id text,
  changes jsonb,
  details jsonb,
  -- No foreign key to projects: checking it takes a shared lock on the project's row for every event, and
  -- concurrent writers of one project then queue on that row's multixact (bench/event_cost.ts, 32 role
  -- updates in flight in one project: the event cost 34 % of the write's transaction with the key, 17 %
  -- without). Projects are never deleted, and an event is written by its change, to that change's project.
  constraint audit_events__pkey primary key (id)
);
-- Newest first per project, with the id as tie-breaker (cursor pagination); and by time alone for retention.
create index audit_events__project_id_occurred_at on audit_events (project_id, occurred_at desc, id desc);
create index audit_events__occurred_at on audit_events (occurred_at);

-- Subscriptions: a signing secret (Standard Webhooks, `whsec_…`) is needed to sign, so it is kept whole,
-- sealed with AES-256-GCM under KEY_ENCRYPTION_KEY when that is set.
create table webhooks (
  project_id text not null,
  id text not null,
  url text not null,
  description text,
  event_types text[] not null,
  is_active boolean not null default true,
  secret text,
  secret_sealed bytea,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint webhooks__pkey primary key (id),
  constraint webhooks__project_id_id unique (project_id, id),
  constraint webhooks__project_id_fkey foreign key (project_id) references projects (id) on delete cascade,
  constraint webhooks__secret check ((secret is null) <> (secret_sealed is null))
);

-- The outbox: a committed event's deliveries, claimed by workers of every instance with SKIP LOCKED.
create table webhook_deliveries (
  project_id text not null,
  id text not null,
  webhook_id text not null,
  event_id text not null,
  status text not null default 'pending'
    constraint webhook_deliveries__status check (status in ('pending', 'sending', 'delivered', 'failed')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  locked_until timestamptz,
  last_attempt_at timestamptz,
  last_status integer,
  last_error text,
  delivered_at timestamptz,
  created_at timestamptz not null default now(),
  constraint webhook_deliveries__pkey primary key (id),
  constraint webhook_deliveries__webhook_fkey foreign key (project_id, webhook_id)
    references webhooks (project_id, id) on delete cascade,
  constraint webhook_deliveries__event_fkey foreign key (event_id) references audit_events (id) on delete cascade
);
create index webhook_deliveries__due on webhook_deliveries (next_attempt_at) where status in ('pending', 'sending');
create index webhook_deliveries__webhook_id on webhook_deliveries (webhook_id, created_at desc, id desc);
create index webhook_deliveries__event_id on webhook_deliveries (event_id);
