/** Field path (such as user.phone or family_members[0].height) to its messages, from 422 VALIDATION_ERROR. */
export type FieldErrors = Record<string, string[]>;

/** What the platform answered on failure, kept so one error type can carry every detail a partner needs for support. */
export interface PartnerApiErrorInit {
  status: number;
  code: string | null;
  message: string;
  fieldErrors?: FieldErrors;
  requestId: string | null;
  retryAfterSeconds?: number | null;
  operationId?: string;
  body?: unknown;
}

/**
 * The one error every PartnerClient call throws when the platform refuses a
 * request: the HTTP status, the spec's string error code (null for the
 * report pull's codeless 404 and 429), the message, the field errors of a
 * 422 VALIDATION_ERROR and the X-Request-Id to quote to support.
 */
export class PartnerApiError extends Error {
  /** HTTP status code. */
  readonly status: number;
  /** The spec's error code (e.g. USER_NOT_FOUND), or the OAuth error (e.g. invalid_client); null when the answer has none. */
  readonly code: string | null;
  /** Field errors of 422 VALIDATION_ERROR; empty otherwise. */
  readonly fieldErrors: FieldErrors;
  /** X-Request-Id of the answer, which identifies the request in the platform logs. */
  readonly requestId: string | null;
  /** Retry-After in seconds when the platform sent one (429, 503, 409 IDEMPOTENCY_KEY_IN_PROGRESS). */
  readonly retryAfterSeconds: number | null;
  /** The SDK operation that failed. */
  readonly operationId: string | undefined;
  /** The parsed answer body (or its text when it was not JSON). */
  readonly body: unknown;
  constructor(init: PartnerApiErrorInit) {
    super(`${init.status}${init.code ? " " + init.code : ""}: ${init.message}${init.requestId ? ` (request ${init.requestId})` : ""}`);
    this.name = "PartnerApiError";
    this.status = init.status;
    this.code = init.code;
    this.fieldErrors = init.fieldErrors ?? {};
    this.requestId = init.requestId;
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
    this.operationId = init.operationId;
    this.body = init.body;
  }

  /** The platform's human-readable message, without the status and request id prefix. */
  get apiMessage(): string {
    const b = this.body as { message?: unknown; error_description?: unknown } | undefined;
    if (b && typeof b.message === "string") return b.message;
    if (b && typeof b.error_description === "string") return b.error_description;
    return this.message;
  }
}
