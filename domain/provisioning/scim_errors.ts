/**
 * SCIM's own errors (RFC 7644 §3.12): a status, a `scimType` where the RFC names one, and a detail. Kept apart
 * from the admin API's codes as OAuth's are: a SCIM client reads `scimType`, never our `error`.
 */

export type ScimType =
  | "invalidFilter"
  | "tooMany"
  | "uniqueness"
  | "mutability"
  | "invalidSyntax"
  | "invalidPath"
  | "noTarget"
  | "invalidValue"
  | "invalidVers"
  | "sensitive";

export const ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error";

export class ScimError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 412 | 413 | 415 | 500 | 501 | 503,
    readonly scimType: ScimType | undefined,
    readonly detail: string,
  ) {
    super(detail);
    this.name = "ScimError";
  }
}

/** 400 `invalidValue` naming the attribute. */
export function invalidValue(attribute: string, issue: string): ScimError {
  return new ScimError(400, "invalidValue", `${attribute}: ${issue}`);
}

/** 400 `invalidSyntax`. */
export function invalidSyntax(detail: string): ScimError {
  return new ScimError(400, "invalidSyntax", detail);
}
