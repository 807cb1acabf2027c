/** ApiError: what every failed call of the admin client throws, carrying the service's error body. */
import type { Api } from "./generated/models.ts";

/** Every error code the service documents (the `error` field of its error body). */
export type ApiErrorCode = `${Api.Error.ErrorEnum}`;

/** One offending field of an `invalid_params` error. */
export type ApiErrorDetail = { field: string; issue: string };

/**
 * A call the service answered with an error status: `status` is the HTTP status, `error` the stable code to
 * switch on, `error_description` a human-readable message, `details` the offending fields of `invalid_params`.
 * An answer that does not carry the service's error body (a proxy's 502 page, say) becomes
 * `system_error` with a description naming the status and content type.
 */
export class ApiError extends Error {
  override readonly name = "ApiError";
  readonly status: number;
  readonly error: ApiErrorCode;
  readonly error_description: string;
  readonly details?: ApiErrorDetail[];
  /** The response's headers, e.g. `Retry-After` on 429 and 503. */
  readonly headers: Headers;

  constructor(
    status: number,
    body: { error: ApiErrorCode; error_description: string; details?: ApiErrorDetail[] },
    headers: Headers = new Headers(),
  ) {
    super(`${status} ${body.error}: ${body.error_description}`);
    this.status = status;
    this.error = body.error;
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
    const shaped = body as { error?: unknown; error_description?: unknown; details?: unknown } | undefined;
    if (typeof shaped?.error === "string" && typeof shaped.error_description === "string") {
      return new ApiError(response.status, {
        error: shaped.error as ApiErrorCode,
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
