// CommonJS smoke test of the packed package, installed as a partner would install it.
const assert = require("node:assert/strict");
const sdk = require("@healthtech/partner-open-platform");

assert.equal(sdk.signM("ak_3f9c2a7d5e1b4c60", 1763870400, "as_9b1e6d4c2a8f7e35d0c4b2a1f6e9d8c7", ""), "a57b9c2b064d7136484b90c3fc332871");
const body = Buffer.from('{"event":"x"}');
sdk.verifyWebhook({ secret: "s", timestamp: 100, signature: sdk.signWebhook("s", 100, body), body, now: 100 });
assert.throws(() => sdk.verifyWebhook({ secret: "s", timestamp: 100, signature: "00", body, now: 100 }), sdk.WebhookVerificationError);
assert.equal(typeof new sdk.PartnerClient({ baseUrl: "http://127.0.0.1:1", appId: 1, appKey: "k", appSecret: "s" }).verifyBenefitUse, "function");
assert.ok(new sdk.PartnerApiError({ status: 404, code: "USER_NOT_FOUND", message: "m", requestId: "r" }) instanceof Error);
console.log("cjs ok");
