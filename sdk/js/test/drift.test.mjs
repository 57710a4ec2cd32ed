// One source of truth: the generated models and operations equal what the
// generator makes of internal/openapi/openapi.yaml now, every partner
// operation of the document is a PartnerClient method, and the client sends
// each with the document's method, path, parameters and authentication.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { generate } from "../scripts/generate.mjs";
import { PartnerClient, operations } from "../dist/esm/index.js";
import { spec, specText } from "./openapi.mjs";
import { sdkRoot } from "./paths.mjs";

test("src/models.ts and src/operations.ts are what the generator makes of openapi.yaml today", () => {
  for (const [rel, text] of Object.entries(generate(specText))) {
    assert.equal(readFileSync(join(sdkRoot, rel), "utf8"), text, `${rel} is stale: run npm run generate`);
  }
});

const partnerSchemes = new Set(["AppId", "schemeH", "oauthBearer", "oauthClient"]);
const docOps = [];
for (const [path, item] of Object.entries(spec.paths)) {
  for (const [method, op] of Object.entries(item)) {
    if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
    const sec = (op.security ?? []).flatMap((r) => Object.keys(r));
    if (sec.some((k) => partnerSchemes.has(k))) docOps.push({ method: method.toUpperCase(), path, id: op.operationId });
  }
}

test("every partner operation of the document (scheme M, scheme H, OAuth) is a PartnerClient method", () => {
  assert.ok(docOps.length >= 25, `found ${docOps.length} partner operations`);
  assert.deepEqual(Object.keys(operations).sort(), docOps.map((o) => o.id).sort());
  for (const o of docOps) {
    assert.equal(operations[o.id].method, o.method);
    assert.equal(operations[o.id].path, o.path);
    assert.equal(typeof PartnerClient.prototype[o.id], "function", `PartnerClient.${o.id} missing`);
  }
  for (const path of ["/open/v1/channel/users", "/open/v1/health-reports/{openReportId}", "/open/v1/benefit-cards/verify-use", "/sandbox/mock/measure", "/v1/health/daily-report", "/oauth/token", "/open/v1/webhooks/deliveries/{deliveryId}/resend"]) {
    assert.ok(docOps.some((o) => o.path === path), `${path} is a partner operation`);
  }
});

// Calls every method against a recording fetch and checks the request line and auth headers.
// The document declares scheme M on the app-signed routes; the client signs them with its scheme (H by default).
for (const scheme of ["H", "M"]) test(`each method sends its operation's method, path and authentication (scheme ${scheme})`, async () => {
  const seen = [];
  const fetch = async (url, init) => {
    seen.push({ url: new URL(url), init });
    const u = new URL(url);
    const data = u.pathname === "/oauth/token" ? { access_token: "at_" + "0".repeat(48), token_type: "Bearer", expires_in: 7200, scope: "daily_report" } : null;
    const body = u.pathname.startsWith("/oauth/") ? (data ?? {}) : { success: true, code: 0, message: "ok", data: { deliveries: [], events: [], fulfillments: [], next_cursor: null, has_more: false }, timestamp: "2026-01-01T00:00:00+08:00" };
    return new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });
  };
  const c = new PartnerClient({ baseUrl: "http://127.0.0.1:1", appId: 7, appKey: "ak", appSecret: "as", fetch, scheme });
  const calls = {
    registerChannelUser: () => c.registerChannelUser({ channel_user_id: "u", user: { name: "n" } }),
    getChannelUserSnapshot: () => c.getChannelUserSnapshot(1, { channel_user_id: "u" }),
    updateChannelUser: () => c.updateChannelUser(1, { nickname: null }),
    upsertFamilyGroup: () => c.upsertFamilyGroup(1, { app_group_id: 1, name: "g" }),
    dissolveFamilyGroup: () => c.dissolveFamilyGroup(1, 2),
    upsertFamilyMember: () => c.upsertFamilyMember(1, { app_user_id: "m", app_group_id: 1, name: "n", relationship: "SELF" }),
    deleteFamilyMember: () => c.deleteFamilyMember(1, 3),
    listMyDeliveries: () => c.listMyDeliveries({ status: "abandoned", limit: 5 }),
    getMyDelivery: () => c.getMyDelivery("d/1"),
    resendMyDelivery: () => c.resendMyDelivery("d1"),
    rotateMyWebhookSecret: () => c.rotateMyWebhookSecret(),
    activateMyWebhookSecret: () => c.activateMyWebhookSecret(),
    webhookEventFeed: () => c.webhookEventFeed({ after: "1-2" }),
    pullHealthReport: () => c.pullHealthReport(9),
    getDailyReport: () => c.getDailyReport({ open_user_id: 1 }),
    sandboxMockMeasure: () => c.sandboxMockMeasure({ thirdUserId: "t", deviceKey: "HOME_SPO2_RING", measureMode: "SPO2" }),
    oauthToken: () => c.oauthToken(),
    oauthRevoke: () => c.oauthRevoke("at_x"),
    createOrder: () => c.createOrder({ third_order_id: "t", contact_person: "p", contact_phone: "13800138000", address: "a", items: [{ goods_code: "G", quantity: 1, unit_price: 1 }] }),
    getOrderDetail: () => c.getOrderDetail("PO1"),
    sandboxShippedCallbackTest: () => c.sandboxShippedCallbackTest({ order_code: "PO1" }),
    triggerSandboxEvent: () => c.triggerSandboxEvent({ event: "order.shipped" }),
    registerOwnServiceProvider: () => c.registerOwnServiceProvider({ name: "n", type: "HEALTH_STATION", contact: "c" }),
    batchIssueBenefitCards: () => c.batchIssueBenefitCards({ cards: [] }),
    verifyBenefitUse: () => c.verifyBenefitUse({ card_number: "123456789012345", benefit_item_id: 1 }),
    getBenefitCard: () => c.getBenefitCard("123456789012345"),
    listFulfillments: () => c.listFulfillments({ role: "issuer" }),
    rateFulfillment: () => c.rateFulfillment(4, { rating: 5 }),
    listMyWebhookEndpoints: () => c.listMyWebhookEndpoints(),
    createMyWebhookEndpoint: () => c.createMyWebhookEndpoint({ url: "https://example.com/h", events: ["user.*"] }),
    getMyWebhookEndpoint: () => c.getMyWebhookEndpoint(0),
    updateMyWebhookEndpoint: () => c.updateMyWebhookEndpoint(3, { enabled: false, events: null }),
    deleteMyWebhookEndpoint: () => c.deleteMyWebhookEndpoint(3),
    rotateMyWebhookEndpointSecret: () => c.rotateMyWebhookEndpointSecret(3),
    activateMyWebhookEndpointSecret: () => c.activateMyWebhookEndpointSecret(3),
    sendMyWebhookEndpointTest: () => c.sendMyWebhookEndpointTest(3),
  };
  assert.deepEqual(Object.keys(calls).sort(), Object.keys(operations).sort());
  for (const [id, call] of Object.entries(calls)) {
    seen.length = 0;
    await call();
    const op = operations[id];
    const req = seen.find((s) => s.init.method === op.method && new RegExp("^" + op.path.replace(/\{[^}]+\}/g, "[^/]+") + "$").test(s.url.pathname));
    assert.ok(req, `${id}: no ${op.method} ${op.path} sent (saw ${seen.map((s) => s.init.method + " " + s.url.pathname).join(", ")})`);
    const h = req.init.headers;
    const auth = op.auth === "M" ? scheme : op.auth;
    const want = { M: ["X-App-Id", "X-Timestamp", "X-Signature"], H: ["X-App-Key", "X-Timestamp", "X-Nonce", "X-Signature"], basic: ["Authorization"], bearer: ["Authorization", "X-App-Key"] }[auth];
    for (const name of want) assert.ok(h[name], `${id}: ${name} missing`);
    if (auth === "H") assert.equal(h["X-App-Id"], undefined, `${id}: scheme H sends no X-App-Id`);
    if (auth === "M") assert.equal(h["X-Nonce"], undefined, `${id}: scheme M sends no nonce`);
    for (const q of new URL(req.url).searchParams.keys()) assert.ok(op.query.includes(q), `${id}: query ${q} not in the document`);
    assert.equal(Boolean(h["Idempotency-Key"]), op.idempotencyKey, `${id}: Idempotency-Key sent iff the operation takes one`);
    if (op.requestContentType) assert.equal(h["Content-Type"], op.requestContentType);
  }
});
