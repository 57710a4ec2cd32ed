// Webhook verification edge cases and typed parsing of every event the
// OpenAPI document's x-webhooks lists.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  WebhookPayloadError,
  WebhookVerificationError,
  constructWebhookEvent,
  parseWebhookEvent,
  signWebhook,
  verifyWebhook,
  webhookEvents,
} from "../dist/esm/index.js";
import { deref, sample, spec } from "./openapi.mjs";

const secret = "whsec_test";
const body = Buffer.from('{"event":"x"}');
const ts = 1763870700;
const sig = signWebhook(secret, ts, body);
const refused = (reason) => (e) => e instanceof WebhookVerificationError && e.reason === reason;

test("verifyWebhook: tolerance edges are 300 s either way, inclusive", () => {
  for (const now of [ts - 300, ts, ts + 300]) verifyWebhook({ secret, timestamp: ts, signature: sig, body, now });
  for (const now of [ts - 301, ts + 301]) assert.throws(() => verifyWebhook({ secret, timestamp: ts, signature: sig, body, now }), refused("timestamp_out_of_tolerance"));
  verifyWebhook({ secret, timestamp: ts, signature: sig, body, now: ts + 1000, toleranceSeconds: 1000 });
});

test("verifyWebhook: refuses a changed body, another secret, another timestamp, a bad or missing signature", () => {
  const now = ts;
  assert.throws(() => verifyWebhook({ secret, timestamp: ts, signature: sig, body: Buffer.from('{"event":"y"}'), now }), refused("signature_mismatch"));
  assert.throws(() => verifyWebhook({ secret: secret + "2", timestamp: ts, signature: sig, body, now }), refused("signature_mismatch"));
  assert.throws(() => verifyWebhook({ secret, timestamp: ts + 1, signature: sig, body, now }), refused("signature_mismatch"));
  assert.throws(() => verifyWebhook({ secret, timestamp: ts, signature: sig.slice(0, 63), body, now }), refused("signature_mismatch"));
  assert.throws(() => verifyWebhook({ secret, timestamp: ts, signature: sig.slice(0, 63) + "g", body, now }), refused("signature_mismatch"));
  assert.throws(() => verifyWebhook({ secret, timestamp: ts, signature: "", body, now }), refused("missing_signature"));
  assert.throws(() => verifyWebhook({ secret, timestamp: undefined, signature: sig, body, now }), refused("malformed_timestamp"));
  assert.throws(() => verifyWebhook({ secret, timestamp: "17638707OO", signature: sig, body, now }), refused("malformed_timestamp"));
});

test("verifyWebhook: during a rotation any of several secrets is accepted, none of them wrong", () => {
  verifyWebhook({ secret: ["whsec_new", secret], timestamp: ts, signature: sig, body, now: ts });
  verifyWebhook({ secret: [secret, "whsec_new"], timestamp: ts, signature: sig, body, now: ts });
  assert.throws(() => verifyWebhook({ secret: ["a", "b"], timestamp: ts, signature: sig, body, now: ts }), refused("signature_mismatch"));
  assert.throws(() => verifyWebhook({ secret: [], timestamp: ts, signature: sig, body, now: ts }), TypeError);
});

test("verifyWebhook: body must be raw bytes, not a string or parsed object", () => {
  assert.throws(() => verifyWebhook({ secret, timestamp: ts, signature: sig, body: body.toString(), now: ts }), TypeError);
  assert.throws(() => verifyWebhook({ secret, timestamp: ts, signature: sig, body: { event: "x" }, now: ts }), TypeError);
  verifyWebhook({ secret, timestamp: ts, signature: sig, body: new Uint8Array(body), now: ts });
});

test("every x-webhooks event parses into its typed event; a missing required field is refused", () => {
  const names = Object.keys(spec["x-webhooks"]);
  assert.deepEqual([...webhookEvents].sort(), [...names].sort());
  for (const name of names) {
    const schema = spec["x-webhooks"][name].post.requestBody.content["application/json"].schema;
    const s = sample(schema);
    s.event = name;
    const ev = parseWebhookEvent(Buffer.from(JSON.stringify({ ...s, a_future_field: 1 })));
    assert.equal(ev.event, name);
    assert.equal(ev.a_future_field, 1, "unknown fields are kept");
    const required = new Set();
    for (const part of [schema, ...(schema.allOf ?? [])]) for (const r of deref(part)?.required ?? []) required.add(r);
    for (const r of required) {
      if (r === "event") continue;
      const { [r]: _, ...rest } = s;
      assert.throws(() => parseWebhookEvent(JSON.stringify(rest)), WebhookPayloadError, `${name} without ${r}`);
    }
  }
  assert.throws(() => parseWebhookEvent('{"event":"no.such.event"}'), WebhookPayloadError);
  assert.throws(() => parseWebhookEvent("[1]"), WebhookPayloadError);
  assert.throws(() => parseWebhookEvent("{"), WebhookPayloadError);
});

test("constructWebhookEvent verifies from headers (any case, Headers or record) and checks they match the body", () => {
  const s = sample(spec.components.schemas.HealthReportWebhook);
  s.event = "health.report.created";
  const raw = Buffer.from(JSON.stringify(s));
  const t = 1763870800;
  const h = { "x-webhook-timestamp": String(t), "X-Webhook-Signature": signWebhook(secret, t, raw), "x-webhook-event": s.event, "x-webhook-id": s.delivery_id };
  const { deliveryId, event } = constructWebhookEvent({ secret, headers: h, body: raw, now: t });
  assert.equal(deliveryId, s.delivery_id);
  assert.equal(event.event, "health.report.created");
  assert.equal(constructWebhookEvent({ secret, headers: new Headers(h), body: raw, now: t }).deliveryId, s.delivery_id);
  assert.throws(() => constructWebhookEvent({ secret, headers: { ...h, "x-webhook-event": "health.report.updated" }, body: raw, now: t }), WebhookPayloadError);
  assert.throws(() => constructWebhookEvent({ secret, headers: { ...h, "x-webhook-id": "other" }, body: raw, now: t }), WebhookPayloadError);
  assert.throws(() => constructWebhookEvent({ secret: "other", headers: h, body: raw, now: t }), WebhookVerificationError);
});
