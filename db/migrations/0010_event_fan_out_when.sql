-- The fan-out trigger now fires only for an event written while its project had an active webhook. Its
-- PL/pgSQL call, made for every event only to find no webhook in most projects, was the largest part of what
-- an event costs PostgreSQL: measured with pgbench, 32 clients, a role update with its event pipelined with
-- COMMIT as the service sends it, 4,190-4,380 transactions/s with the trigger on every event, 4,960-5,080 with
-- this, 6,060-7,000 without the event. The event's INSERT sets `fans_out` itself, in the same statement, from
-- the project's webhooks as they are then (db/audit.ts). A row written without it, by an instance of an
-- earlier version during a rolling upgrade, takes the default and fans out as before: the trigger's function
-- still looks the webhooks up itself. The column is not part of the API's event.
alter table audit_events add column fans_out boolean not null default true;
drop trigger audit_events__fan_out on audit_events;
create trigger audit_events__fan_out after insert on audit_events
  for each row when (new.fans_out) execute function audit_events_fan_out();
