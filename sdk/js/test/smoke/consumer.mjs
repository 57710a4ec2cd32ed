// ESM smoke test of the packed package, installed as a partner would install it.
import assert from "node:assert/strict";
import { PartnerApiError, PartnerClient, WebhookVerificationError, signM, signWebhook, verifyWebhook, parseWebhookEvent, operations } from "@healthtech/partner-open-platform";

assert.equal(signM("ak_3f9c2a7d5e1b4c60", 1763870400, "as_9b1e6d4c2a8f7e35d0c4b2a1f6e9d8c7", ""), "a57b9c2b064d7136484b90c3fc332871");
const body = Buffer.from('{"event":"x"}');
verifyWebhook({ secret: "s", timestamp: 100, signature: signWebhook("s", 100, body), body, now: 100 });
assert.throws(() => verifyWebhook({ secret: "s", timestamp: 100, signature: signWebhook("t", 100, body), body, now: 100 }), WebhookVerificationError);
assert.equal(typeof new PartnerClient({ baseUrl: "http://127.0.0.1:1", appId: 1, appKey: "k", appSecret: "s" }).registerChannelUser, "function");
assert.ok(new PartnerApiError({ status: 404, code: "USER_NOT_FOUND", message: "m", requestId: "r" }) instanceof Error);
assert.equal(typeof parseWebhookEvent, "function");
assert.ok(Object.keys(operations).length >= 25);
console.log("esm ok");
