import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/** Bytes or text accepted where a request body is signed; text is signed as its UTF-8 bytes. */
export type BodyInput = string | Uint8Array;

/** The default webhook and timestamp tolerance of the platform: 300 seconds either way. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

function bytes(body: BodyInput): Buffer {
  return typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/**
 * Scheme M signature (channel users, orders, benefit cards, webhooks log):
 * lower-case hex MD5 of appKey + timestamp + appSecret + body, no separators.
 * GET and DELETE sign the empty body.
 */
export function signM(appKey: string, timestamp: number | string, appSecret: string, body: BodyInput = ""): string {
  return createHash("md5")
    .update(Buffer.from(appKey + String(timestamp) + appSecret, "utf8"))
    .update(bytes(body))
    .digest("hex");
}

/** The inputs of a scheme H signature (report pull and sandbox mock). */
export interface SchemeHInput {
  appSecret: string;
  /** HTTP method; upper-cased before signing. */
  method: string;
  /** Path and query string exactly as requested, e.g. /open/v1/health-reports/42?x=1. */
  uri: string;
  timestamp: number | string;
  /** The X-Nonce value; the empty string when the header is omitted. */
  nonce?: string;
  body?: BodyInput;
}

/** Scheme H string to sign: METHOD LF URI LF timestamp LF nonce LF hex(SHA-256(body)); exposed so integrators can debug mismatches. */
export function schemeHSignString(input: Omit<SchemeHInput, "appSecret">): string {
  const bodyHash = createHash("sha256").update(bytes(input.body ?? "")).digest("hex");
  return [input.method.toUpperCase(), input.uri, String(input.timestamp), input.nonce ?? "", bodyHash].join("\n");
}

/** Scheme H signature: lower-case hex HMAC-SHA-256 of the scheme H string, keyed with the app secret. */
export function signH(input: SchemeHInput): string {
  return createHmac("sha256", input.appSecret).update(schemeHSignString(input), "utf8").digest("hex");
}

/** Plugin launch sign: lower-case hex HMAC-SHA-256 keyed with the app secret over appKey|thirdUserId|timestamp|nonce. */
export function signPluginLaunch(appSecret: string, appKey: string, thirdUserId: string, timestamp: number | string, nonce: string): string {
  return createHmac("sha256", appSecret).update(`${appKey}|${thirdUserId}|${timestamp}|${nonce}`, "utf8").digest("hex");
}

/** Webhook signature: lower-case hex HMAC-SHA-256 keyed with the webhook secret over timestamp + "." + raw body bytes. */
export function signWebhook(secret: string, timestamp: number | string, body: Uint8Array): string {
  return createHmac("sha256", secret).update(`${timestamp}.`, "utf8").update(bytes(body)).digest("hex");
}

/** Why a webhook was refused, so a receiver can answer 401 (signature) or 400 (stale timestamp) as the spec suggests. */
export type WebhookVerificationReason = "missing_signature" | "malformed_timestamp" | "timestamp_out_of_tolerance" | "signature_mismatch";

/** Thrown by verifyWebhook when a webhook must be rejected; reason tells which check failed. */
export class WebhookVerificationError extends Error {
  /** Which check failed. */
  readonly reason: WebhookVerificationReason;
  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.name = "WebhookVerificationError";
    this.reason = reason;
  }
}

/** Inputs of verifyWebhook: the secret, the X-Webhook-Timestamp and X-Webhook-Signature headers, and the raw body bytes. */
export interface VerifyWebhookInput {
  /** The webhook secret; during a rotation pass [newSecret, oldSecret] and any one that matches is accepted. */
  secret: string | readonly string[];
  /** X-Webhook-Timestamp (Unix seconds). */
  timestamp: string | number | null | undefined;
  /** X-Webhook-Signature (hex, either case). */
  signature: string | null | undefined;
  /** The raw request body exactly as received; never a re-serialised object. */
  body: Uint8Array;
  /** Allowed clock difference in seconds; 300 by default. */
  toleranceSeconds?: number;
  /** Current time as Unix seconds or a Date; the system clock by default. */
  now?: number | Date;
}

const decimal = /^[0-9]{1,12}$/;
const hex64 = /^[0-9a-fA-F]{64}$/;

/**
 * Verifies a webhook delivery over the raw body bytes: the timestamp must be
 * within toleranceSeconds (300 by default) of now, and the signature is
 * compared in constant time. Throws WebhookVerificationError on failure.
 */
export function verifyWebhook(input: VerifyWebhookInput): void {
  const { secret, signature, body } = input;
  if (!(body instanceof Uint8Array)) {
    throw new TypeError("verifyWebhook: body must be the raw request bytes (Uint8Array or Buffer), not a parsed or re-serialised value");
  }
  const secrets = typeof secret === "string" ? [secret] : [...(secret ?? [])];
  if (secrets.length === 0 || secrets.some((x) => typeof x !== "string" || x === "")) throw new TypeError("verifyWebhook: secret is required");
  if (!signature) throw new WebhookVerificationError("missing_signature", "X-Webhook-Signature is missing");
  const ts = input.timestamp === undefined || input.timestamp === null ? "" : String(input.timestamp).trim();
  if (!decimal.test(ts)) throw new WebhookVerificationError("malformed_timestamp", "X-Webhook-Timestamp is not Unix seconds");
  const tolerance = input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = input.now === undefined ? Date.now() / 1000 : input.now instanceof Date ? input.now.getTime() / 1000 : input.now;
  if (Math.abs(Math.floor(now) - Number(ts)) > tolerance) {
    throw new WebhookVerificationError("timestamp_out_of_tolerance", `X-Webhook-Timestamp is more than ${tolerance} s from now`);
  }
  const sig = signature.trim();
  // A malformed header is compared against a dummy of the right length so the work done does not depend on where it differs.
  const got = hex64.test(sig) ? Buffer.from(sig, "hex") : Buffer.alloc(32);
  let equal = false;
  for (const s of secrets) equal = timingSafeEqual(got, Buffer.from(signWebhook(s, ts, body), "hex")) || equal;
  if (!equal || !hex64.test(sig)) throw new WebhookVerificationError("signature_mismatch", "X-Webhook-Signature does not match the body");
}
