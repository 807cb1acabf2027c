/** ApiError: what every failed call of the admin client throws, carrying the service's error body. */
import type { Api } from "./generated/models.ts";

/** Every error code the service documents (the `error` field of its error body; `error_code` at the OAuth endpoints). */
export type ApiErrorCode = `${Api.ErrorCode}`;

/**
 * The RFC 6749 §5.2 codes the token, revocation and introspection endpoints answer in `error` (with RFC 6749
 * §4.1.2.1's `server_error` and `temporarily_unavailable` for a failure of the service); the service's own code
 * is then in `error_code`.
 */
export type OAuthErrorCode = `${Api.OAuthErrorCode}`;

/** One offending field of an `invalid_params` error. */
export type ApiErrorDetail = Api.Error.Detail;

/** An error body as the service sends it. */
export type ApiErrorBody = {
  error: ApiErrorCode | OAuthErrorCode;
  error_code?: ApiErrorCode;
  error_description: string;
  details?: ApiErrorDetail[];
};

/**
 * A call the service answered with an error status: `status` is the HTTP status, `code` the service's stable
 * code to switch on, wherever the error came from, `error_description` a human-readable message, `details` the
 * offending fields of `invalid_params`. `error` is the body's `error` as sent: the same code as `code` for the
 * admin API, and at the token, revocation and introspection endpoints the RFC 6749 §5.2 code (`invalid_grant`,
 * `invalid_client`, …), with the service's code in `error_code`. An answer that does not carry the service's
 * error body (a proxy's 502 page, say) becomes `system_error` with a description naming the status and content
 * type.
 */
export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly status: number;
  /** The body's `error`: the service's code, or the RFC 6749 §5.2 code at the OAuth endpoints. */
  readonly error: ApiErrorCode | OAuthErrorCode;
  /** The service's code beside an RFC 6749 §5.2 `error` (token, revocation and introspection endpoints only). */
  readonly error_code?: ApiErrorCode;
  /** The service's code of every error: `error_code` when the body has one, else `error`. */
  readonly code: ApiErrorCode;
  readonly error_description: string;
  readonly details?: ApiErrorDetail[];
  /** The response's headers, e.g. `Retry-After` on 429 and 503. */
  readonly headers: Headers;

  constructor(
    status: number,
    body: ApiErrorBody,
    headers: Headers = new Headers(),
  ) {
    const shown = body.error_code === undefined ? body.error : `${body.error} (${body.error_code})`;
    super(`${status} ${shown}: ${body.error_description}`);
    this.status = status;
    this.error = body.error;
    if (body.error_code !== undefined) this.error_code = body.error_code;
    this.code = body.error_code ?? body.error as ApiErrorCode;
    this.error_description = body.error_description;
    if (body.details) this.details = body.details;
    this.headers = headers;
  }

  /** Reads a failed response's body into an ApiError. */
  static async fromResponse(response: Response): Promise<ApiError> {
    const type = response.headers.get("content-type") ?? "";
    let body: unknown;
    try {
      body = /json/i.test(type) ? await response.json() : (await response.body?.cancel(), undefined);
    } catch {
      body = undefined;
    }
    const shaped = body as
      | {
        error?: unknown;
        error_code?: unknown;
        error_description?: unknown;
        details?: unknown;
      }
      | undefined;
    if (
      typeof shaped?.error === "string" &&
      typeof shaped.error_description === "string"
    ) {
      return new ApiError(response.status, {
        error: shaped.error as ApiErrorCode | OAuthErrorCode,
        ...(typeof shaped.error_code === "string" ? { error_code: shaped.error_code as ApiErrorCode } : {}),
        error_description: shaped.error_description,
        ...(Array.isArray(shaped.details) ? { details: shaped.details as ApiErrorDetail[] } : {}),
      }, response.headers);
    }
    return new ApiError(response.status, {
      error: "system_error",
      error_description: `unexpected answer: HTTP ${response.status}${type ? ` (${type})` : ""}`,
    }, response.headers);
  }

  /**
   * For callers of the generated classes used directly, which throw the failed `Response` itself:
   * `catch (e) { throw await ApiError.from(e) }` turns it into an ApiError and leaves anything else as it is.
   */
  static async from(thrown: unknown): Promise<unknown> {
    return thrown instanceof Response ? await ApiError.fromResponse(thrown) : thrown;
  }
}
