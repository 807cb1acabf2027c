/**
 * The choice of a role given by default (an identity provider's or the project's `default_role_id`): the
 * project's roles by name, "No role", and a role the list does not hold kept as its id (one the user may not
 * read, or past the first 100).
 */
import type { Role } from "../../../openapi/roles.ts";
import type { Problem } from "../layout.tsx";
import type { Page } from "../layout.tsx";
import { areaApi } from "../projects.tsx";
import type { Console } from "../session.ts";

/**
 * The project's roles by name (an organization role is never a `default_role_id`); none when the user may not
 * read them.
 */
export async function rolesOf(k: Console): Promise<Role[]> {
  const res = await k.api<Page<Role>>(
    "GET",
    `${areaApi(k, "roles")}?scope=project&page_size=100&sort_by=name&sort_dir=asc`,
  );
  return res.ok ? res.body.data : [];
}

export function RoleSelect(
  p: { value: string; roles: Role[]; problem: Problem | null; label: string; hint?: string },
) {
  const error = p.problem?.fields["default_role_id"];
  const known = p.roles.some((r) => r.id === p.value);
  const described = [p.hint ? "f-default_role_id-hint" : "", error ? "f-default_role_id-error" : ""]
    .filter(Boolean).join(" ");
  return (
    <>
      <label for="f-default_role_id">{p.label}</label>
      <select id="f-default_role_id" name="default_role_id" aria-describedby={described || undefined}>
        <option value="" selected={!p.value}>No role</option>
        {!known && p.value && <option value={p.value} selected>{p.value}</option>}
        {p.roles.map((r) => <option key={r.id} value={r.id} selected={r.id === p.value}>{r.name}</option>)}
      </select>
      {p.hint && <p class="hint" id="f-default_role_id-hint">{p.hint}</p>}
      {error && <p class="field-error" id="f-default_role_id-error">{error}</p>}
    </>
  );
}
