-- What a decision through conditions reads (db/authz/authzen.ts `pendingObject`), as one function: written
-- inline, its subqueries (the object's properties, the grants with conditions) were planned and initialised by
-- every decision's statement, though only a decision through a condition runs them; a function call is one
-- expression, and PL/pgSQL plans its queries on first use in a session and keeps them.
create function condition_inputs(
  role_id text, permission_id text, role_condition text, subject_properties jsonb, is_user boolean,
  subject_id text, resource_id text, object_id text, grants_live boolean
) returns text language plpgsql stable as $$
begin
  return json_build_object('pending', json_build_object(
    'role_id', role_id, 'permission_id', permission_id, 'role_condition', role_condition,
    'subject', subject_properties,
    'object', (select ob.properties from objects ob
               where ob.resource_id = condition_inputs.resource_id and ob.id = condition_inputs.object_id),
    'grants', case when grants_live then (
      select json_agg(json_build_object('grant_id', gr.id, 'object_id', gr.object_id, 'role_id', gr.role_id,
                                        'condition', gr.condition, 'role_condition', rp.condition)
                      order by op.depth, gr.id)
      from object_paths op
      join object_grants gr on gr.resource_id = op.resource_id and gr.object_id = op.ancestor_id
        and gr.subject_id = condition_inputs.subject_id and (gr.user_id is not null) = is_user
        and (gr.expires_at is null or gr.expires_at > now())
      join role_permissions rp on rp.role_id = gr.role_id and rp.permission_id = condition_inputs.permission_id
      where op.resource_id = condition_inputs.resource_id and op.object_id = condition_inputs.object_id
        and (gr.condition is not null or rp.condition is not null)) end,
    'now', now()))::text;
end $$;
