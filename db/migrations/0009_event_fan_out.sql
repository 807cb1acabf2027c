-- A committed event's webhook deliveries (the outbox) are now written by a trigger on audit_events instead of a
-- writable CTE in the event's INSERT. The CTE planned and ran an INSERT into webhook_deliveries with every
-- event, opening that table, its four indexes and its foreign keys even for a project without webhooks. The
-- trigger touches webhook_deliveries only when the project has an active webhook. Measured with
-- bench/event_cost.ts on PostgreSQL (the same admin write through HTTP with and without its event), the event
-- added about 20 % with the CTE, 13-18 % with the trigger, and 9-12 % with no fan-out at all. Same
-- transaction, same statement: an event and its deliveries still commit together or not at all.

-- One delivery per event and webhook. While instances of the previous version still run beside this one (a
-- rolling upgrade), their CTE writes the delivery too; the trigger, which fires after the CTE's insert in the
-- same statement, then writes nothing.
drop index webhook_deliveries__event_id;
create unique index webhook_deliveries__event_id_webhook_id on webhook_deliveries (event_id, webhook_id);

create function audit_events_fan_out() returns trigger language plpgsql as $$
begin
  if exists (select 1 from webhooks w where w.project_id = new.project_id and w.is_active) then
    insert into webhook_deliveries (project_id, id, webhook_id, event_id)
    select w.project_id, gen_random_uuid()::text, w.id, new.id
    from webhooks w
    where w.project_id = new.project_id and w.is_active and exists (
      select 1 from unnest(w.event_types) p
      where p = '*' or p = new.type or (right(p, 2) = '.*' and starts_with(new.type, left(p, -1))))
    on conflict (event_id, webhook_id) do nothing;
  end if;
  return null;
end
$$;

create trigger audit_events__fan_out after insert on audit_events
  for each row execute function audit_events_fan_out();

