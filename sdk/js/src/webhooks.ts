import type { WebhookEventMap } from "./models.js";
import { webhookEvents, webhookRequired } from "./operations.js";
import { verifyWebhook } from "./signing.js";
import { eventTypes, type EventTypeName } from "./eventTypes.js";

/** Every webhook event name the platform sends. */
export type WebhookEventName = keyof WebhookEventMap;

/** A webhook body, typed by its event: switch on event and TypeScript narrows the body (and data). */
export type WebhookEvent = { [K in WebhookEventName]: WebhookEventMap[K] }[WebhookEventName];

/** Thrown when a webhook body is not one of the platform's event bodies (not JSON, unknown event, missing fields). */
export class WebhookPayloadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookPayloadError";
  }
}

const known: ReadonlySet<string> = new Set(webhookEvents);
const catalogued: ReadonlySet<string> = new Set(eventTypes.map((t) => t.name));

/** Whether name is an event this SDK version knows; receivers may acknowledge unknown ones and ignore them. */
export function isWebhookEventName(name: unknown): name is WebhookEventName {
  return typeof name === "string" && known.has(name);
}

/** Whether name is a type of the platform's event catalog (GET /open/v1/event-types) as this SDK version knows it. */
export function isCataloguedEventType(name: unknown): name is EventTypeName {
  return typeof name === "string" && catalogued.has(name);
}

/**
 * Parses a webhook body (raw bytes or text) into its typed event. It checks
 * the event name and that every field the OpenAPI document requires for that
 * event is present; unknown extra fields are kept, as the spec asks
 * consumers to tolerate them. Verify the signature first (verifyWebhook or
 * constructWebhookEvent).
 */
export function parseWebhookEvent(body: Uint8Array | string): WebhookEvent {
  const text = typeof body === "string" ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8");
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new WebhookPayloadError(`webhook body is not JSON: ${(e as Error).message}`);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new WebhookPayloadError("webhook body is not a JSON object");
  const o = v as Record<string, unknown>;
  if (!isCataloguedEventType(o.event) || !isWebhookEventName(o.event)) throw new WebhookPayloadError(`unknown webhook event ${JSON.stringify(o.event)}`);
  const missing = (webhookRequired[o.event] ?? []).filter((f) => !(f in o));
  if (missing.length > 0) throw new WebhookPayloadError(`${o.event} body lacks ${missing.join(", ")}`);
  return o as unknown as WebhookEvent;
}

/** Headers as a Fetch Headers object, or a plain record such as Node's IncomingMessage.headers. */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(h: HeaderSource, name: string): string | undefined {
  if (typeof (h as Headers).get === "function") return (h as Headers).get(name) ?? undefined;
  const rec = h as Record<string, string | string[] | undefined>;
  const key = Object.keys(rec).find((k) => k.toLowerCase() === name.toLowerCase());
  const v = key === undefined ? undefined : rec[key];
  return Array.isArray(v) ? v[0] : v;
}

/** Inputs of constructWebhookEvent: the webhook secret, the request headers and the raw body bytes. */
export interface ConstructWebhookEventInput {
  /** The webhook secret, or [newSecret, oldSecret] during a rotation. */
  secret: string | readonly string[];
  headers: HeaderSource;
  body: Uint8Array;
  toleranceSeconds?: number;
  now?: number | Date;
}

/** A verified, parsed delivery, with the delivery id to de-duplicate on. */
export interface VerifiedWebhook {
  deliveryId: string;
  event: WebhookEvent;
}

/**
 * Verifies a delivery from its X-Webhook-* headers and raw body (throwing
 * WebhookVerificationError), then parses it (throwing WebhookPayloadError,
 * also when X-Webhook-Event or X-Webhook-Id disagree with the body).
 */
export function constructWebhookEvent(input: ConstructWebhookEventInput): VerifiedWebhook {
  verifyWebhook({
    secret: input.secret,
    timestamp: header(input.headers, "X-Webhook-Timestamp"),
    signature: header(input.headers, "X-Webhook-Signature"),
    body: input.body,
    toleranceSeconds: input.toleranceSeconds,
    now: input.now,
  });
  const event = parseWebhookEvent(input.body);
  const name = header(input.headers, "X-Webhook-Event");
  if (name !== undefined && name !== event.event) throw new WebhookPayloadError(`X-Webhook-Event ${name} differs from the body's event ${event.event}`);
  const id = header(input.headers, "X-Webhook-Id");
  if (id !== undefined && id !== event.delivery_id) throw new WebhookPayloadError("X-Webhook-Id differs from the body's delivery_id");
  return { deliveryId: event.delivery_id, event };
}
