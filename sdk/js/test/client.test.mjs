// PartnerClient against a scripted platform on loopback: what a partner
// observes on retries, errors, signatures, pagination and concurrent calls.
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { PartnerApiError, PartnerClient } from "../dist/esm/index.js";

const appKey = "ak_test";
const appSecret = "as_test";
let server;
let baseUrl;
let handler = () => [200, {}, { success: true, code: 0, message: "ok", timestamp: "t" }];
const requests = [];

before(async () => {
  server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const r = { method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks) };
      requests.push(r);
      const [status, headers, body] = handler(r, requests.length);
      res.writeHead(status, { "Content-Type": "application/json", "X-Request-Id": `req-${requests.length}`, ...headers });
      res.end(typeof body === "string" ? body : JSON.stringify(body));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  baseUrl = `http://127.0.0.1:${server.address().port}`;
});
after(() => new Promise((r) => server.close(r)));

function client(extra = {}) {
  const sleeps = [];
  const c = new PartnerClient({ baseUrl, appId: 42, appKey, appSecret, sleep: async (ms) => void sleeps.push(ms), ...extra });
  return { c, sleeps };
}
const ok = (data) => [200, {}, { success: true, code: 0, message: "ok", data, timestamp: "2026-01-01T00:00:00+08:00" }];
const fail = (status, code, headers = {}, extra = {}) => [status, headers, { success: false, code, message: `m ${code}`, timestamp: "t", ...extra }];
function reset(h) {
  requests.length = 0;
  handler = h;
}

const signHOf = (r) =>
  createHmac("sha256", appSecret)
    .update([r.method, r.url, r.headers["x-timestamp"], r.headers["x-nonce"], createHash("sha256").update(r.body).digest("hex")].join("\n"))
    .digest("hex");

test("the default signs scheme H on every route: a register, a read and bodyless DELETEs of one second all go out in it", async () => {
  reset(() => ok({ open_user_id: 7, channel_user_id: "u-1", created: true, family_groups: [], family_members: [] }));
  const fixed = 1_763_870_400_900;
  const { c, sleeps } = client({ now: () => fixed });
  assert.equal(c.scheme, "H");
  await c.registerChannelUser({ channel_user_id: "u-1", user: { name: "张三" } });
  await c.getChannelUserSnapshot(7, { channel_user_id: "u-1" });
  await c.deleteFamilyMember(7, 70);
  await c.deleteFamilyMember(7, 71);
  assert.deepEqual(sleeps, []);
  assert.deepEqual(
    requests.map((r) => r.url),
    ["/open/v1/channel/users", "/open/v1/channel/users/7?channel_user_id=u-1", "/open/v1/channel/users/7/family-members/70", "/open/v1/channel/users/7/family-members/71"],
  );
  for (const r of requests) {
    assert.equal(r.headers["x-app-id"], undefined);
    assert.equal(r.headers["x-app-key"], appKey);
    assert.equal(r.headers["x-timestamp"], "1763870400");
    assert.match(r.headers["x-signature"], /^[0-9a-f]{64}$/);
    assert.equal(r.headers["x-signature"], signHOf(r));
  }
  assert.equal(new Set(requests.map((r) => r.headers["x-nonce"])).size, 4, "a fresh nonce per request");
  assert.equal(new Set(requests.map((r) => r.headers["x-signature"])).size, 4);
});

test("an unknown scheme is refused", () => {
  assert.throws(() => new PartnerClient({ baseUrl, appId: 42, appKey, appSecret, scheme: "md5" }), TypeError);
});

test("scheme M by option: MD5(app_key + X-Timestamp + app_secret + raw body), as the platform checks it", async () => {
  reset(() => ok({ open_user_id: 1, channel_user_id: "u-1", created: true, family_groups: [], family_members: [] }));
  const { c } = client({ scheme: "M" });
  const out = await c.registerChannelUser({ channel_user_id: "u-1", user: { name: "张三" } });
  assert.equal(out.open_user_id, 1);
  const r = requests[0];
  assert.equal(r.headers["x-app-id"], "42");
  assert.equal(r.headers["content-type"], "application/json");
  const want = createHash("md5").update(appKey + r.headers["x-timestamp"] + appSecret).update(r.body).digest("hex");
  assert.equal(r.headers["x-signature"], want);
  assert.deepEqual(JSON.parse(r.body), { channel_user_id: "u-1", user: { name: "张三" } });
  assert.ok(Math.abs(Number(r.headers["x-timestamp"]) - Date.now() / 1000) < 300);
  assert.equal(r.headers["x-nonce"], undefined);
  assert.equal(r.headers["x-app-key"], undefined);
});

test("scheme M by option keeps no per-second bookkeeping: a read and bodyless writes of one second are signed in it; the report pull stays scheme H", async () => {
  reset(() => ok({ id: 9 }));
  const fixed = 1_763_870_403_000;
  const { c, sleeps } = client({ now: () => fixed, scheme: "M" });
  await c.getChannelUserSnapshot(1);
  await c.dissolveFamilyGroup(1, 2);
  await c.deleteFamilyMember(1, 3);
  await c.pullHealthReport(9);
  assert.deepEqual(sleeps, []);
  const empty = createHash("md5").update(appKey + "1763870403" + appSecret).digest("hex");
  for (const r of requests.slice(0, 3)) {
    assert.equal(r.headers["x-timestamp"], "1763870403");
    assert.equal(r.headers["x-signature"], empty);
    assert.equal(r.headers["x-app-id"], "42");
  }
  const pull = requests[3];
  assert.equal(pull.headers["x-app-id"], undefined);
  assert.equal(pull.headers["x-signature"], signHOf(pull));
});

test("scheme H: HMAC over METHOD, URI, timestamp, nonce, body hash; a fresh nonce on every attempt", async () => {
  reset((_, n) => (n === 1 ? [429, { "Retry-After": "1" }, { success: false, message: "slow down", timestamp: "t" }] : ok({ id: 9 })));
  const { c, sleeps } = client();
  const report = await c.pullHealthReport(9);
  assert.equal(report.id, 9);
  assert.deepEqual(sleeps, [1000], "Retry-After honoured");
  assert.equal(requests.length, 2);
  const nonces = new Set();
  for (const r of requests) {
    const s = ["GET", r.url, r.headers["x-timestamp"], r.headers["x-nonce"], createHash("sha256").update("").digest("hex")].join("\n");
    assert.equal(r.headers["x-signature"], createHmac("sha256", appSecret).update(s).digest("hex"));
    assert.equal(r.headers["x-app-key"], appKey);
    nonces.add(r.headers["x-nonce"]);
  }
  assert.equal(nonces.size, 2, "each attempt has its own nonce (the platform refuses a replayed one)");
});

test("codeless 404 of the report pull surfaces as PartnerApiError with null code and the request id", async () => {
  reset(() => [404, {}, { success: false, message: "not found", timestamp: "t" }]);
  const { c } = client();
  const e = await c.pullHealthReport(1, { requestId: "partner-trace-1" }).catch((e) => e);
  assert.equal(requests[0].headers["x-request-id"], "partner-trace-1", "the caller's request id is sent");
  assert.ok(e instanceof PartnerApiError);
  assert.equal(e.status, 404);
  assert.equal(e.code, null);
  assert.equal(e.requestId, "req-1");
  assert.equal(e.apiMessage, "not found");
  assert.equal(requests.length, 1, "404 is not retried");
});

test("422 VALIDATION_ERROR carries field errors", async () => {
  reset(() => fail(422, "VALIDATION_ERROR", {}, { errors: { "user.phone": ["must be 11 digits"] } }));
  const { c } = client();
  const e = await c.registerChannelUser({ channel_user_id: "u", user: { name: "n", phone: "1" } }).catch((e) => e);
  assert.ok(e instanceof PartnerApiError);
  assert.equal(e.code, "VALIDATION_ERROR");
  assert.deepEqual(e.fieldErrors, { "user.phone": ["must be 11 digits"] });
  assert.equal(e.operationId, "registerChannelUser");
  assert.match(e.message, /422 VALIDATION_ERROR: m VALIDATION_ERROR \(request req-1\)/);
});

test("a write with an Idempotency-Key is retried on 503 and 409 IDEMPOTENCY_KEY_IN_PROGRESS with the same key", async () => {
  reset((_, n) => (n === 1 ? fail(503, "HTTP_503", { "Retry-After": "2" }) : n === 2 ? fail(409, "IDEMPOTENCY_KEY_IN_PROGRESS", { "Retry-After": "1" }) : ok({ order_code: "PO1", id: 1, order_time: "x" })));
  const { c, sleeps } = client();
  const out = await c.call("createOrder", { body: { third_order_id: "t" } });
  assert.equal(out.data.order_code, "PO1");
  assert.deepEqual(sleeps, [2000, 1000]);
  const keys = requests.map((r) => r.headers["idempotency-key"]);
  assert.equal(keys.length, 3);
  assert.ok(keys[0] && keys.every((k) => k === keys[0]), "one key for every attempt of one write");
  assert.equal(out.idempotencyKey, keys[0]);
  assert.match(keys[0], /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const bodies = new Set(requests.map((r) => r.body.toString()));
  assert.equal(bodies.size, 1, "same body bytes on every attempt");
  assert.equal(new Set(requests.map((r) => r.headers["x-nonce"])).size, 3, "every attempt signed anew with its own nonce");
  for (const r of requests) assert.equal(r.headers["x-signature"], signHOf(r));
});

test("a caller's own Idempotency-Key is sent; Idempotent-Replayed is reported", async () => {
  reset(() => [200, { "Idempotent-Replayed": "true" }, { success: true, code: 0, message: "ok", data: { member_id: 3, app_user_id: "m", created: false }, timestamp: "t" }]);
  const { c } = client();
  const res = await c.call("upsertFamilyMember", { pathParams: { openUserId: 1 }, body: {}, idempotencyKey: "my-key-1" });
  assert.equal(requests[0].headers["idempotency-key"], "my-key-1");
  assert.equal(res.replayed, true);
});

test("writes without a key are not retried: rotate secret, and any write when autoIdempotencyKeys is off", async () => {
  reset(() => fail(503, "HTTP_503", { "Retry-After": "0" }));
  const { c } = client();
  await assert.rejects(c.rotateMyWebhookSecret(), (e) => e.status === 503 && e.retryAfterSeconds === 0);
  assert.equal(requests.length, 1);
  reset(() => fail(429, "HTTP_429", { "Retry-After": "0" }));
  const { c: c2 } = client({ autoIdempotencyKeys: false });
  await assert.rejects(c2.createOrder({}), (e) => e.code === "HTTP_429");
  assert.equal(requests.length, 1);
  assert.equal(requests[0].headers["idempotency-key"], undefined);
});

test("reads retry on 429 with backoff up to maxRetries, then throw the last error", async () => {
  reset(() => fail(429, "HTTP_429"));
  const { c, sleeps } = client({ retry: { maxRetries: 2, baseDelayMs: 100, maxDelayMs: 150 } });
  await assert.rejects(c.getOrderDetail("PO1"), (e) => e instanceof PartnerApiError && e.code === "HTTP_429");
  assert.equal(requests.length, 3);
  assert.equal(sleeps.length, 2);
  assert.ok(sleeps[0] >= 50 && sleeps[0] <= 100 && sleeps[1] >= 75 && sleeps[1] <= 150, `backoff ${sleeps}`);
});

test("a Retry-After longer than maxRetryAfterMs is not waited for", async () => {
  reset(() => fail(503, "HTTP_503", { "Retry-After": "3600" }));
  const { c, sleeps } = client();
  await assert.rejects(c.getOrderDetail("PO1"), (e) => e.retryAfterSeconds === 3600);
  assert.deepEqual(sleeps, []);
  assert.equal(requests.length, 1);
});

test("network errors are retried for reads only", async () => {
  let calls = 0;
  const fetch = async (url, init) => {
    calls++;
    if (calls === 1) throw new TypeError("fetch failed");
    return globalThis.fetch(url, init);
  };
  reset(() => ok({ order_code: "PO1" }));
  const { c } = client({ fetch });
  assert.equal((await c.getOrderDetail("PO1")).order_code, "PO1");
  assert.equal(calls, 2);
  calls = 0;
  const { c: c2 } = client({ fetch, autoIdempotencyKeys: false });
  await assert.rejects(c2.rotateMyWebhookSecret(), TypeError);
  assert.equal(calls, 1);
});

test("concurrent calls: each resolves with its own answer and duplicate writes get distinct keys", async () => {
  reset((r) => ok({ order_code: new URL(r.url, baseUrl).searchParams.get("order_code") ?? JSON.parse(r.body).third_order_id }));
  const { c } = client();
  const codes = Array.from({ length: 20 }, (_, i) => `PO${i}`);
  const got = await Promise.all(codes.map((code) => c.getOrderDetail(code)));
  assert.deepEqual(got.map((o) => o.order_code), codes);
  requests.length = 0;
  const same = { third_order_id: "T-1", contact_person: "p", contact_phone: "13800138000", address: "a", items: [] };
  await Promise.all([c.createOrder(same), c.createOrder(same)]);
  assert.equal(requests.length, 2);
  assert.notEqual(requests[0].headers["idempotency-key"], requests[1].headers["idempotency-key"], "two intended writes are two keys");
});

test("pagination: iterateMyDeliveries follows next_cursor, iterateWebhookEvents has_more, iterateFulfillments short pages", async () => {
  reset((r) => {
    const u = new URL(r.url, baseUrl);
    const after = u.searchParams.get("after");
    if (u.pathname.endsWith("/deliveries")) {
      const pages = { null: [["a", "b"], "1-2"], "1-2": [["c"], "1-3"], "1-3": [[], null] };
      const [ids, next] = pages[String(after)];
      return ok({ deliveries: ids.map((id) => ({ delivery_id: id })), next_cursor: next });
    }
    if (u.pathname.endsWith("/events")) {
      return after === null ? ok({ events: [{ cursor: "1-1" }, { cursor: "1-2" }], next_cursor: "1-2", has_more: true }) : ok({ events: [{ cursor: "1-3" }], next_cursor: "1-3", has_more: false });
    }
    const from = Number(after ?? 0);
    const all = [1, 2, 3, 4, 5].filter((id) => id > from).slice(0, Number(u.searchParams.get("limit")));
    return ok({ fulfillments: all.map((id) => ({ fulfillment_record_id: id })) });
  });
  const { c } = client();
  const d = [];
  for await (const x of c.iterateMyDeliveries({ status: "delivered" })) d.push(x.delivery_id);
  assert.deepEqual(d, ["a", "b", "c"]);
  assert.ok(requests.every((r) => !r.url.includes("/deliveries") || r.url.includes("status=delivered")), "filters kept on every page");
  const ev = [];
  for await (const x of c.iterateWebhookEvents()) ev.push(x.cursor);
  assert.deepEqual(ev, ["1-1", "1-2", "1-3"]);
  const f = [];
  for await (const x of c.iterateFulfillments({ limit: 2 })) f.push(x.fulfillment_record_id);
  assert.deepEqual(f, [1, 2, 3, 4, 5]);
});

test("daily report: one token for many reads, renewed once after a 401", async () => {
  let tokens = 0;
  reset((r) => {
    if (r.url === "/oauth/token") {
      tokens++;
      assert.equal(r.headers.authorization, "Basic " + Buffer.from(`${appKey}:${appSecret}`).toString("base64"));
      assert.equal(r.body.toString(), "grant_type=client_credentials&scope=daily_report");
      return [200, {}, { access_token: `at_${tokens}`, token_type: "Bearer", expires_in: 7200, scope: "daily_report" }];
    }
    if (r.headers.authorization === "Bearer at_1" && requests.filter((x) => x.url.startsWith("/v1/")).length > 2) return fail(401, "HTTP_401");
    return ok({ date: "2026-01-01", heartRate: null, spo2: null, aiInsight: "x" });
  });
  const { c } = client();
  await c.getDailyReport({ open_user_id: 1 });
  await c.getDailyReport({ open_user_id: 1 });
  assert.equal(tokens, 1);
  const r = await c.getDailyReport({ open_user_id: 1, date: "2026-01-01" });
  assert.equal(r.date, "2026-01-01");
  assert.equal(tokens, 2);
  assert.equal(requests.at(-1).headers["x-app-key"], appKey);
  assert.equal(requests.at(-1).headers.authorization, "Bearer at_2");
});

test("OAuth errors map to PartnerApiError with the RFC 6749 error as code", async () => {
  reset(() => [401, {}, { error: "invalid_client", error_description: "bad client" }]);
  const { c } = client();
  await assert.rejects(c.oauthToken(), (e) => e instanceof PartnerApiError && e.status === 401 && e.code === "invalid_client" && e.apiMessage === "bad client");
});

test("a 401 is not signed again, under either scheme: it surfaces at once", async () => {
  for (const scheme of ["H", "M"]) {
    reset(() => fail(401, "HTTP_401"));
    const { c, sleeps } = client({ scheme });
    await assert.rejects(c.deleteFamilyMember(1, 2), (e) => e.status === 401 && e.code === "HTTP_401");
    await assert.rejects(c.getOrderDetail("PO1"), (e) => e.status === 401);
    assert.equal(requests.length, 2, `${scheme}: one request per call`);
    assert.deepEqual(sleeps, []);
  }
});
