// A partner's day against the real platform, through the SDK: register with
// family, snapshot, upsert, an order, a report ingested and pulled with
// scheme H after its webhook was verified, verify-use, the daily report, the
// sandbox mock, the delivery log and feed, secret rotation, typed errors.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { PartnerApiError, PartnerClient, constructWebhookEvent } from "../dist/esm/index.js";
import { startPlatform, waitFor } from "./platform.mjs";

let platform;
let receiver;
const received = []; // {headers, body: Buffer}
let receiverUrl;

before(async () => {
  receiver = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
  receiverUrl = `http://127.0.0.1:${receiver.address().port}/hooks`;
  platform = await startPlatform();
});

after(async () => {
  await platform?.stop();
  await new Promise((r) => receiver.close(r));
});

async function adminOK(method, path, body, want) {
  const res = await platform.admin(method, path, body);
  assert.equal(res.status, want, `${method} ${path}: ${JSON.stringify(res.body)}`);
  return res.body?.data;
}

async function newApp(name, extra = {}) {
  const creds = await adminOK("POST", "/admin/v1/apps", { name, scopes: ["channel_users", "orders", "health_reports", "daily_report", "webhooks", "benefits", "plugin"], ...extra }, 201);
  const client = new PartnerClient({ baseUrl: platform.baseUrl, appId: creds.app_id, appKey: creds.app_key, appSecret: creds.app_secret });
  return { creds, client };
}

/** Waits for a delivery that verifies with secret and matches pred, and returns the typed event. */
async function webhook(secret, pred, what) {
  return waitFor(what, () => {
    for (const r of received) {
      let v;
      try {
        v = constructWebhookEvent({ secret, headers: r.headers, body: r.body });
      } catch {
        continue;
      }
      if (pred(v.event)) return v;
    }
    return null;
  });
}

/** Runs one step of the day as a subtest; on failure the platform's log tail is printed once, for diagnosis. */
let logShown = false;
function step(t, name, fn) {
  return t.test(name, async () => {
    try {
      await fn();
    } catch (e) {
      if (!logShown) {
        logShown = true;
        console.error(`--- platform log (tail) ---\n${platform.log().slice(-6000)}`);
      }
      throw e;
    }
  });
}

test("a partner's day through the SDK", async (t) => {
  const { creds, client } = await newApp("sdk-js partner", { webhook_url: receiverUrl });
  let openUserId;
  let secret = creds.webhook_secret;

  await step(t, "register with family, idempotent repeat, concurrent duplicate", async () => {
    const body = {
      channel_user_id: "cu-1",
      user: { name: "李雷", phone: "13812345678", gender: "male", birth_date: "1990-01-02" },
      family_groups: [{ app_group_id: 1, name: "Home" }],
      family_members: [{ app_user_id: "m-self", app_group_id: 1, name: "李雷", relationship: "SELF", is_default: true }],
    };
    const reg = await client.registerChannelUser(body);
    assert.equal(reg.created, true);
    assert.equal(reg.channel_user_id, "cu-1");
    assert.equal(reg.family_groups.length, 1);
    assert.equal(reg.family_members[0].app_user_id, "m-self");
    openUserId = reg.open_user_id;
    const again = await client.registerChannelUser(body);
    assert.equal(again.created, false);
    assert.equal(again.open_user_id, openUserId);
    const both = await Promise.all([1, 2].map(() => client.registerChannelUser({ channel_user_id: "cu-2", user: { name: "韩梅梅" } })));
    assert.equal(both[0].open_user_id, both[1].open_user_id, "one user for a duplicate register");
    assert.deepEqual(both.map((b) => b.created).sort(), [false, true]);
  });

  await step(t, "snapshot, upsert a member, patch the profile", async () => {
    let snap = await client.getChannelUserSnapshot(openUserId);
    assert.equal(snap.user.open_user_id, openUserId);
    assert.equal(snap.user.phone, "138****5678");
    assert.equal(snap.family_members.length, 1);
    const up = await client.upsertFamilyMember(openUserId, { app_user_id: "m-spouse", app_group_id: 1, name: "韩梅梅", relationship: "SPOUSE", height: 165 });
    assert.equal(up.created, true);
    const up2 = await client.upsertFamilyMember(openUserId, { app_user_id: "m-spouse", app_group_id: 1, name: "韩梅梅", relationship: "SPOUSE", height: 166 });
    assert.equal(up2.created, false);
    assert.equal(up2.member_id, up.member_id);
    await client.updateChannelUser(openUserId, { nickname: "Lei" });
    snap = await client.getChannelUserSnapshot(0, { channel_user_id: "cu-1" });
    assert.equal(snap.user.nickname, "Lei");
    assert.deepEqual(snap.family_members.map((m) => m.app_user_id).sort(), ["m-self", "m-spouse"]);
    assert.equal(snap.family_members.find((m) => m.app_user_id === "m-spouse").height, 166);

    const { event } = await webhook(secret, (e) => e.event === "user.family_member.created" && e.data.app_user_id === "m-spouse", "user.family_member.created webhook");
    assert.equal(event.open_user_id, openUserId);
    assert.equal(event.data.member_id, up.member_id);
  });

  await step(t, "an order", async () => {
    await adminOK("POST", "/admin/v1/goods", { goods_code: "G-BP-1", goods_name: "BP monitor" }, 201);
    const created = await client.createOrder({
      third_order_id: "T-1001",
      contact_person: "李雷",
      contact_phone: "13812345678",
      address: "1 Road",
      user_id: openUserId,
      items: [{ goods_code: "G-BP-1", quantity: 2, unit_price: 19900 }],
    });
    assert.ok(created.order_code);
    const order = await client.getOrderDetail(created.order_code);
    assert.equal(order.order_status, "PENDING_REVIEW");
    assert.equal(order.items[0].total_price, 39800);
    assert.equal(order.third_order_id, "T-1001");
    const shipped = await client.sandboxShippedCallbackTest({ order_code: created.order_code });
    assert.ok(shipped);
    const { event } = await webhook(secret, (e) => e.event === "order.shipped" && e.order_code === created.order_code, "order.shipped webhook");
    assert.equal(event.complete, true);
    assert.equal(event.third_order_id, "T-1001");
    assert.equal((await client.getOrderDetail(created.order_code)).order_status, "SHIPPED");
  });

  await step(t, "deletes, dissolves and reads at once: the client never reuses a signature across routes", async () => {
    const reg = await client.registerChannelUser({
      channel_user_id: "cu-3",
      user: { name: "王五" },
      family_groups: [{ app_group_id: 1, name: "A" }, { app_group_id: 2, name: "B" }],
      family_members: ["a1", "a2", "b1"].map((id) => ({ app_user_id: id, app_group_id: id.startsWith("a") ? 1 : 2, name: id, relationship: "OTHER" })),
    });
    const member = (id) => reg.family_members.find((m) => m.app_user_id === id).member_id;
    const groupB = reg.family_groups.find((g) => g.app_group_id === 2).family_group_id;
    await Promise.all([
      client.deleteFamilyMember(reg.open_user_id, member("a1")),
      client.deleteFamilyMember(reg.open_user_id, member("a2")),
      client.dissolveFamilyGroup(reg.open_user_id, groupB),
      client.getChannelUserSnapshot(reg.open_user_id),
      client.getOrderDetail("PO-none").catch((e) => assert.equal(e.code, "ORDER_NOT_FOUND")),
    ]);
    const snap = await client.getChannelUserSnapshot(reg.open_user_id);
    assert.deepEqual(snap.family_members, []);
    assert.deepEqual(snap.family_groups.map((g) => g.app_group_id), [1]);
    const gone = await client.deleteFamilyMember(reg.open_user_id, member("a1")).catch((e) => e);
    assert.equal(gone.code, "FAMILY_MEMBER_NOT_FOUND");
  });

  await step(t, "a report ingested, announced by a verified webhook, pulled with scheme H", async () => {
    const up = await adminOK("POST", "/admin/v1/uploaders", { name: "station-feed" }, 201);
    const raw = { data_source: "station", data_type: "indicators", indicators: [{ code: "SBP", value: 121, unit: "mmHg" }] };
    const res = await platform.admin("POST", "/admin/v1/health-reports", { open_user_id: openUserId, report_type: "BLOOD_PRESSURE", measurement_no: "M-1", raw_data: raw }, up.token);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const reportId = res.body.data.id;
    const { event, deliveryId } = await webhook(secret, (e) => e.event === "health.report.created" && e.open_report_id === reportId, "health.report.created webhook");
    assert.equal(event.channel_user_id, "cu-1");
    assert.ok(deliveryId);
    const report = await client.pullHealthReport(event.open_report_id);
    assert.equal(report.id, reportId);
    assert.equal(report.app_id, creds.app_id);
    assert.equal(report.open_user_id, openUserId);
    assert.deepEqual(report.raw_data, raw);
    const e = await client.pullHealthReport(reportId + 1000).catch((e) => e);
    assert.ok(e instanceof PartnerApiError);
    assert.equal(e.status, 404);
  });

  await step(t, "verify-use by a health station on a card the partner issued", async () => {
    const station = await newApp("sdk-js station");
    const sp = await station.client.registerOwnServiceProvider({ name: "Station 1", type: "HEALTH_STATION", contact: "010-1", points_code: "P-1" });
    const item = await adminOK("POST", "/admin/v1/benefit-items", { name: "Annual check-up" }, 201);
    const cp = await adminOK("POST", "/admin/v1/service-providers", { app_id: creds.app_id, name: "Insurer", type: "CHANNEL_PARTNER", contact: "x" }, 201);
    for (const id of [sp.provider_id, cp.provider_id]) await adminOK("POST", `/admin/v1/service-providers/${id}/review`, { decision: "approve" }, 200);
    await adminOK("PUT", `/admin/v1/service-providers/${sp.provider_id}/benefit-items`, { allowed_benefit_item_ids: [item.benefit_item_id] }, 200);
    const expires = new Date(Date.now() + 48 * 3600 * 1000).toISOString();
    const issued = await client.batchIssueBenefitCards({ batch_id: "b-1", cards: [{ holder_name: "韩梅梅", holder_phone: "13987654321", expires_at: expires, items: [{ benefit_item_id: item.benefit_item_id, quantity: 3 }] }] });
    const card = issued.cards[0].card_number;
    const v = await station.client.verifyBenefitUse({ card_number: card, benefit_item_id: item.benefit_item_id, points_code: "P-1", remark: "front desk" });
    assert.equal(v.quantity_used, 1);
    assert.equal(v.remaining_quantity, 2);
    assert.equal(v.benefit_item_name, "Annual check-up");
    const c = await client.getBenefitCard(card);
    assert.equal(c.items[0].remaining_quantity, 2);
    const records = [];
    for await (const f of station.client.iterateFulfillments({ limit: 1 })) records.push(f.fulfillment_record_id);
    assert.deepEqual(records, [v.fulfillment_record_id]);
    const rated = await waitFor("the fulfillment in the issuer's read models", () =>
      client.rateFulfillment(v.fulfillment_record_id, { rating: 5 }).catch((e) => (e.code === "FULFILLMENT_NOT_FOUND" ? null : Promise.reject(e))),
    );
    assert.ok(rated);
    const again = await client.rateFulfillment(v.fulfillment_record_id, { rating: 4 }).catch((e) => e);
    assert.equal(again.code, "ALREADY_RATED");
    const dup = await station.client.verifyBenefitUse({ card_number: card, benefit_item_id: item.benefit_item_id, points_code: "P-1" }).catch((e) => e);
    assert.ok(dup instanceof PartnerApiError);
    assert.equal(dup.status, 422);
    assert.equal(dup.code, "DUPLICATE_FULFILLMENT");
  });

  await step(t, "errors surface as PartnerApiError with status, code and request id", async () => {
    const e = await client.getChannelUserSnapshot(987654321).catch((e) => e);
    assert.ok(e instanceof PartnerApiError);
    assert.equal(e.status, 404);
    assert.equal(e.code, "USER_NOT_FOUND");
    assert.match(e.requestId ?? "", /\S/);
    const v = await client.upsertFamilyMember(openUserId, { app_user_id: "m-x", app_group_id: 1, name: "x", relationship: "SELF", height: 5 }).catch((e) => e);
    assert.equal(v.code, "VALIDATION_ERROR");
    assert.ok(Object.keys(v.fieldErrors).some((k) => k.includes("height")), JSON.stringify(v.fieldErrors));
    const g = await client.createOrder({ third_order_id: "T-2", contact_person: "p", contact_phone: "13812345678", address: "a", items: [{ goods_code: "NOPE", quantity: 1, unit_price: 1 }] }).catch((e) => e);
    assert.equal(g.code, "GOODS_NOT_FOUND");
    const bad = new PartnerClient({ baseUrl: platform.baseUrl, appId: creds.app_id, appKey: creds.app_key, appSecret: "wrong", retry: { maxRetries: 0 } });
    const u = await bad.getChannelUserSnapshot(openUserId).catch((e) => e);
    assert.equal(u.status, 401);
    assert.equal(u.code, "HTTP_401"); // scheme H refused: the route's own 401
    const badM = new PartnerClient({ baseUrl: platform.baseUrl, appId: creds.app_id, appKey: creds.app_key, appSecret: "wrong", scheme: "M", retry: { maxRetries: 0 } });
    const um = await badM.getChannelUserSnapshot(openUserId).catch((e) => e);
    assert.equal(um.status, 401);
    assert.equal(um.code, "HTTP_401");
    const h = await bad.pullHealthReport(1).catch((e) => e);
    assert.equal(h.status, 401);
    assert.equal(h.code, "INVALID_SIGNATURE");
  });

  await step(t, "daily report with the OAuth token flow", async () => {
    const r = await client.getDailyReport({ open_user_id: openUserId });
    assert.match(r.date, /^\d{4}-\d{2}-\d{2}$/);
    assert.equal(typeof r.aiInsight, "string");
    const tok = await client.oauthToken();
    await client.oauthRevoke(tok.access_token);
  });

  await step(t, "sandbox mock measurement sends a verified plugin.report.ready", async () => {
    const m = await client.sandboxMockMeasure({ thirdUserId: "third-88", deviceKey: "HOME_MULTI_BIO_MONITOR", measureMode: "BP" });
    assert.equal(m.report_type, "blood_pressure");
    const { event } = await webhook(secret, (e) => e.event === "plugin.report.ready" && e.measurement_no === m.measurement_no, "plugin.report.ready webhook");
    assert.equal(event.third_user_id, "third-88");
    assert.equal(event.app_id, creds.app_id);
  });

  await step(t, "delivery log, resend and the event feed, paginated", async () => {
    const got = [];
    for await (const d of client.iterateMyDeliveries({ limit: 2 })) got.push(d);
    assert.ok(got.length >= 5, `deliveries ${got.length}`);
    assert.equal(new Set(got.map((d) => d.delivery_id)).size, got.length, "no delivery twice across pages");
    const delivered = got.find((d) => d.status === "delivered");
    assert.ok(delivered, JSON.stringify(got.map((d) => d.status)));
    const detail = await client.getMyDelivery(delivered.delivery_id);
    assert.equal(detail.delivery_id, delivered.delivery_id);
    const before = received.filter((r) => r.headers["x-webhook-id"] === delivered.delivery_id).length;
    const rs = await client.resendMyDelivery(delivered.delivery_id);
    assert.equal(rs.delivery_id, delivered.delivery_id);
    await waitFor("the resent delivery", () => received.filter((r) => r.headers["x-webhook-id"] === delivered.delivery_id).length > before);
    const feed = [];
    for await (const e of client.iterateWebhookEvents({ limit: 2 })) feed.push(e.event);
    for (const name of ["user.family_member.created", "health.report.created", "plugin.report.ready"]) assert.ok(feed.includes(name), `${name} in feed`);
  });

  await step(t, "webhook secret rotation: after activation deliveries verify with the new secret only", async () => {
    const pending = await client.rotateMyWebhookSecret();
    const act = await client.activateMyWebhookSecret();
    assert.equal(act.activated, true);
    const newSecret = pending.pending_webhook_secret;
    await client.updateChannelUser(openUserId, { nickname: "Lei 2" });
    const { event } = await webhook(newSecret, (e) => e.event === "user.profile.updated" && e.data.changed_fields.includes("nickname") && e.occurred_at, "user.profile.updated signed with the new secret");
    assert.equal(event.open_user_id, openUserId);
    const old = received.filter((r) => r.headers["x-webhook-event"] === "user.profile.updated").at(-1);
    assert.throws(() => constructWebhookEvent({ secret, headers: old.headers, body: old.body }), /does not match/);
    secret = newSecret;
  });
});

test("webhook endpoints through the SDK: an added endpoint signs with its own secret; rotate, activate, disable, delete", async () => {
  const { creds, client } = await newApp("sdk-js endpoints", { webhook_url: receiverUrl });
  const list = await client.listMyWebhookEndpoints();
  assert.equal(list.endpoints.length, 1);
  assert.equal(list.endpoints[0].endpoint_id, 0);
  assert.equal(list.endpoints[0].signing_secret, "app_webhook_secret");
  const ep = await client.createMyWebhookEndpoint({ url: receiverUrl + "/own", events: ["user.*"] });
  assert.match(ep.webhook_secret, /^whsec_/);
  assert.notEqual(ep.webhook_secret, creds.webhook_secret);
  assert.equal(ep.signing_secret, "endpoint_secret");
  const isTest = (id) => (e) => e.event === "webhook.test" && e.endpoint_id === id;
  await client.sendMyWebhookEndpointTest(ep.endpoint_id);
  const { event } = await webhook(ep.webhook_secret, isTest(ep.endpoint_id), "webhook.test signed with the endpoint's secret");
  const raw = received.find((r) => r.headers["x-webhook-id"] === event.delivery_id);
  assert.throws(() => constructWebhookEvent({ secret: creds.webhook_secret, headers: raw.headers, body: raw.body }), /does not match/);

  const rotated = await client.rotateMyWebhookEndpointSecret(ep.endpoint_id);
  assert.equal(rotated.pending_secret, true);
  const active = await client.activateMyWebhookEndpointSecret(ep.endpoint_id);
  assert.equal(active.pending_secret, false);
  const before = received.length;
  await client.sendMyWebhookEndpointTest(ep.endpoint_id);
  await waitFor("a second test event", () => received.length > before);
  await webhook(rotated.pending_webhook_secret, (e) => isTest(ep.endpoint_id)(e) && e.delivery_id !== event.delivery_id, "webhook.test signed with the activated secret");

  const off = await client.updateMyWebhookEndpoint(ep.endpoint_id, { enabled: false, events: null });
  assert.equal(off.enabled, false);
  assert.deepEqual(off.events, []);
  await client.deleteMyWebhookEndpoint(ep.endpoint_id);
  await assert.rejects(client.getMyWebhookEndpoint(ep.endpoint_id), (e) => e instanceof PartnerApiError && e.code === "WEBHOOK_ENDPOINT_NOT_FOUND" && e.status === 404);
});

/** A fetch that keeps the method, URL and headers of every request the SDK sends. */
function recordingFetch() {
  const sent = [];
  const f = async (url, init) => {
    sent.push({ method: init.method, url: new URL(url).pathname, headers: { ...init.headers } });
    return globalThis.fetch(url, init);
  };
  return { sent, fetch: f };
}

test("scheme H by default: a register, a snapshot read and a bodyless DELETE in one second all succeed; scheme M by option still works", async () => {
  const creds = await adminOK("POST", "/admin/v1/apps", { name: "sdk-js schemes", scopes: ["channel_users"] }, 201);
  const rec = recordingFetch();
  const pinned = Math.floor(Date.now() / 1000) * 1000; // one X-Timestamp for every request
  const c = new PartnerClient({ baseUrl: platform.baseUrl, appId: creds.app_id, appKey: creds.app_key, appSecret: creds.app_secret, fetch: rec.fetch, now: () => pinned });
  const reg = await c.registerChannelUser({
    channel_user_id: "h-1",
    user: { name: "Han" },
    family_groups: [{ app_group_id: 1, name: "Home" }],
    family_members: [{ app_user_id: "m1", app_group_id: 1, name: "Han", relationship: "SELF" }],
  });
  assert.equal(reg.created, true);
  const snap = await c.getChannelUserSnapshot(reg.open_user_id);
  assert.equal(snap.family_members.length, 1);
  await c.deleteFamilyMember(reg.open_user_id, reg.family_members[0].member_id);
  assert.deepEqual((await c.getChannelUserSnapshot(reg.open_user_id)).family_members, []);
  assert.equal(rec.sent.length, 4);
  for (const r of rec.sent) {
    assert.equal(r.headers["X-App-Id"], undefined, `${r.method} ${r.url}`);
    assert.equal(r.headers["X-App-Key"], creds.app_key);
    assert.equal(r.headers["X-Timestamp"], String(pinned / 1000));
    assert.match(r.headers["X-Signature"], /^[0-9a-f]{64}$/);
  }
  assert.equal(new Set(rec.sent.map((r) => r.headers["X-Nonce"])).size, 4);
  assert.equal(rec.sent[2].method, "DELETE");
  assert.ok(rec.sent[2].headers["Idempotency-Key"]);

  // Scheme M in one second: the read and the bodyless DELETE share a signature, and both succeed.
  const recM = recordingFetch();
  const pinnedM = Math.floor(Date.now() / 1000) * 1000;
  const cm = new PartnerClient({ baseUrl: platform.baseUrl, appId: creds.app_id, appKey: creds.app_key, appSecret: creds.app_secret, fetch: recM.fetch, scheme: "M", now: () => pinnedM });
  const reg2 = await cm.registerChannelUser({ channel_user_id: "m-1", user: { name: "Wang" }, family_groups: [{ app_group_id: 2, name: "G" }] });
  assert.equal(reg2.created, true);
  const up = await cm.upsertFamilyMember(reg2.open_user_id, { app_user_id: "k", app_group_id: 2, name: "Kid", relationship: "SON" });
  assert.equal(up.created, true);
  assert.equal((await cm.getChannelUserSnapshot(reg2.open_user_id)).user.open_user_id, reg2.open_user_id);
  await cm.deleteFamilyMember(reg2.open_user_id, up.member_id);
  assert.equal(recM.sent.length, 4);
  for (const r of recM.sent) {
    assert.equal(r.headers["X-App-Id"], String(creds.app_id), `${r.method} ${r.url}`);
    assert.equal(r.headers["X-Nonce"], undefined);
    assert.equal(r.headers["X-Timestamp"], String(pinnedM / 1000));
    assert.match(r.headers["X-Signature"], /^[0-9a-f]{32}$/);
  }
  assert.equal(recM.sent[2].headers["X-Signature"], recM.sent[3].headers["X-Signature"]);
});
