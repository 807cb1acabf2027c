/**
 * Resource indicators (RFC 8707): a token asked for one API. `resource` names a resource of the client's project
 * by its `indicator`; the token's `aud` is that indicator and its `scope` the requested permission codes of that
 * resource that the subject holds (all it holds when the request names none of them). Anything else is
 * `invalid_target` (§2): not an absolute URI, a fragment, several values, an indicator no resource has, or one of
 * another project.
 */
import { retryRead, type Sql } from "../../db/connection.ts";
import {
  findIndicatorProject,
  findIndicatorTarget,
  type IndicatorSubject,
} from "../../db/oauth/resource_indicators.ts";
import { AppError } from "../shared/errors.ts";

/** The API a token is for: its indicator (`aud`) and the space-separated permission codes (`scope`). */
export type Target = { indicator: string; scope: string };

const refuse = (description: string) => new AppError("invalid_target", { description });

/** The form's `resource` (absent, once, or repeated) as one well-formed indicator, or undefined. */
export function formIndicator(resource: string | string[] | undefined): string | undefined {
  if (resource === undefined) return undefined;
  return oneIndicator(typeof resource === "string" ? [resource] : resource);
}

/** One `resource` value, well-formed (RFC 8707 §2), or `invalid_target`. */
export function oneIndicator(values: string[]): string {
  if (values.length === 0) throw refuse("the resource is empty");
  if (values.length > 1) throw refuse("one resource per request: ask a token for each API");
  const value = values[0];
  // Any absolute URI is a well-formed indicator; one no resource has is refused below, as unknown.
  if (value.includes("#")) throw refuse("the resource must not have a fragment (RFC 8707 §2)");
  if (!URL.canParse(value)) throw refuse("the resource must be an absolute URI (RFC 8707 §2)");
  return value;
}

/** `invalid_target` unless a resource of the project has this indicator. */
export async function indicatorOfProject(sql: Sql, projectId: string, indicator: string): Promise<void> {
  const project = await retryRead(() => findIndicatorProject(sql, indicator));
  if (project !== projectId) throw refuse("no API of this project has this resource indicator");
}

/**
 * The target of a token for `subject` of `projectId` asked with `resource` and `scope`, or `invalid_target`.
 * Scope values that are not permission codes of the resource (`openid`, another API's) are left out.
 */
export async function targetOf(
  sql: Sql,
  projectId: string,
  subject: IndicatorSubject,
  resource: string,
  scope: string | null | undefined,
): Promise<Target> {
  const found = await retryRead(() => findIndicatorTarget(sql, resource, subject));
  // Another project's API is answered as an unknown one: the client learns nothing of other projects.
  if (!found || found.project_id !== projectId) {
    throw refuse("no API of this project has this resource indicator");
  }
  const asked = new Set((scope ?? "").split(" ").filter((s) => s !== ""));
  const namesSome = found.codes.some((code) => asked.has(code));
  const granted = namesSome ? found.held.filter((code) => asked.has(code)) : found.held;
  return { indicator: resource, scope: granted.join(" ") };
}
