// The API reference and the in-browser signer, in headless Chromium against
// a real platform: the reference renders the OpenAPI document with the
// signing rules under a CSP without inline script; the signer reproduces
// every shared signature vector (../shared/vectors/signatures.json) both as
// functions and through its form; it sends signed requests to the sandbox
// and the platform accepts them; and no secret is in any request the
// browser made.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { openSession } from "./browser.mjs";
import { repoRoot, startPlatform } from "./platform.mjs";

const vectorsPath = process.env.PLATFORM_VECTORS || join(repoRoot, "..", "shared", "vectors", "signatures.json");
assert.ok(existsSync(vectorsPath), `signature vectors not found at ${vectorsPath} (set PLATFORM_VECTORS)`);
const vectors = JSON.parse(readFileSync(vectorsPath, "utf8"));

let platform;
let s;

before(async () => {
  platform = await startPlatform();
  s = await openSession(platform.baseUrl, "signer");
});

after(async () => {
  await s?.close();
  await platform?.stop();
});

test("the API reference shows operations, webhooks and signing rules under the CSP", async () => {
  const res = await s.page.goto("/portal/reference");
  assert.equal(res.status(), 200);
  const csp = res.headers()["content-security-policy"] || "";
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /script-src[^;]*unsafe-inline/);
  await s.page.getByRole("heading", { level: 1, name: "API reference" }).waitFor();
  await s.page.getByRole("heading", { name: "Scheme M (channel users, orders, verify-use)" }).waitFor();
  await s.page.getByRole("heading", { name: "Webhook signature (both webhook families)" }).waitFor();
  // No inline script anywhere: every script element has a src.
  const inline = await s.page.locator("script:not([src])").count();
  assert.equal(inline, 0, "inline <script> on the reference page");
  await s.shot("reference");
  await s.page.getByRole("link", { name: "POST /open/v1/channel/users", exact: true }).first().click();
  await s.page.waitForURL(/\/portal\/reference\/channel-users#op-registerchanneluser$/);
  for (const text of ["POST", "/open/v1/channel/users", "VALIDATION_ERROR"]) {
    assert.ok(await s.page.getByText(text, { exact: true }).first().isVisible(), `${text} is not visible on the channel-users page`);
  }
  await s.shot("reference-register");
  await s.page.goto("/portal/reference/webhook-events");
  assert.ok(await s.page.getByText("health.report.created", { exact: true }).first().isVisible());
});

test("the signer's functions reproduce every shared signature vector", async () => {
  await s.page.goto("/portal/reference/signer");
  await s.page.getByRole("heading", { level: 1, name: "Request signer" }).waitFor();
  const failures = await s.page.evaluate(async (v) => {
    const S = window.PortalSigner;
    const c = v.credentials;
    const bad = [];
    for (const k of v.scheme_m.cases) {
      const r = S.schemeM({ appId: c.app_id, appKey: c.app_key, appSecret: c.app_secret, body: k.body, timestamp: k.timestamp });
      if (r.signature !== k.signature) bad.push(`M ${k.name}: ${r.signature}`);
      for (const [h, want] of Object.entries(k.headers)) if (r.headers[h] !== want) bad.push(`M ${k.name} ${h}: ${r.headers[h]}`);
    }
    for (const k of v.scheme_h.cases) {
      const r = await S.schemeH({ appKey: c.app_key, appSecret: c.app_secret, method: k.method, uri: k.uri, body: k.body, timestamp: k.timestamp, nonce: k.nonce });
      if (r.signString !== k.sign_string) bad.push(`H ${k.name} signString`);
      if (r.signature !== k.signature) bad.push(`H ${k.name}: ${r.signature}`);
    }
    for (const k of v.plugin_launch.cases) {
      const r = await S.launchSign({ appKey: k.app_key, appSecret: c.app_secret, thirdUserId: k.third_user_id, timestamp: k.timestamp, nonce: k.nonce });
      if (r.signString !== k.sign_string || r.signature !== k.signature) bad.push(`launch ${k.name}: ${r.signature}`);
    }
    for (const k of v.webhook.cases) {
      const r = await S.webhookSign({ webhookSecret: c.webhook_secret, timestamp: k.timestamp, body: k.body });
      if (r.signature !== k.signature) bad.push(`webhook ${k.name}: ${r.signature}`);
    }
    return bad;
  }, vectors);
  assert.deepEqual(failures, []);
});

/** Fills the signer's form by label. */
async function fill(page, f) {
  const field = (label) => page.getByLabel(label, { exact: true });
  if (f.appId !== undefined) await field("App ID").fill(String(f.appId));
  if (f.appKey !== undefined) await field("App key").fill(f.appKey);
  if (f.appSecret !== undefined) await field("App secret").fill(f.appSecret);
  if (f.method !== undefined) await field("Method").selectOption(f.method);
  if (f.path !== undefined) await field("Path").fill(f.path);
  if (f.body !== undefined) await field("Body").fill(f.body);
  if (f.timestamp !== undefined) await field("Timestamp").fill(String(f.timestamp));
  if (f.nonce !== undefined) await field("Nonce").fill(f.nonce);
}

test("the signer's form signs like the vectors and chooses scheme H by path", async () => {
  const { page } = s;
  await page.goto("/portal/reference/signer");
  const c = vectors.credentials;
  for (const k of vectors.scheme_m.cases) {
    await fill(page, { appId: c.app_id, appKey: c.app_key, appSecret: c.app_secret, method: k.method, path: "/open/v1/channel/users", body: k.body, timestamp: k.timestamp, nonce: "" });
    await page.getByRole("button", { name: "Sign", exact: true }).click();
    await page.locator("#used-scheme").filter({ hasText: "Scheme M" }).waitFor();
    const headers = await page.locator("#signed-headers").textContent();
    for (const [h, want] of Object.entries(k.headers)) assert.ok(headers.includes(`${h}: ${want}`), `${k.name}: ${headers}`);
    assert.ok(!(await page.locator("#curl").textContent()).includes(c.app_secret), "the secret is in the curl command");
  }
  await page.getByLabel("Scheme", { exact: true }).selectOption("auto");
  for (const k of vectors.scheme_h.cases) {
    await fill(page, { appKey: c.app_key, appSecret: c.app_secret, method: k.method, path: k.uri, body: k.body, timestamp: k.timestamp, nonce: k.nonce });
    await page.getByRole("button", { name: "Sign", exact: true }).click();
    await page.locator("#used-scheme").filter({ hasText: "Scheme H" }).waitFor();
    assert.ok((await page.locator("#signed-headers").textContent()).includes(`X-Signature: ${k.signature}`), k.name);
    assert.equal(await page.locator("#sign-string").textContent(), k.sign_string, k.name);
  }
  await s.shot("signer-signed");
  const w = vectors.webhook.cases[0];
  await page.getByLabel("Webhook secret", { exact: true }).fill(c.webhook_secret);
  await page.getByLabel("X-Webhook-Timestamp", { exact: true }).fill(String(w.timestamp));
  await page.getByLabel("Raw body", { exact: true }).fill(w.body);
  await page.getByLabel("X-Webhook-Signature (received)", { exact: true }).fill(w.signature);
  await page.getByRole("button", { name: "Verify", exact: true }).click();
  await page.locator("#webhook-verdict").filter({ hasText: "Signature matches." }).waitFor();
  assert.equal(await page.locator("#webhook-expected").textContent(), w.signature);
});

test("the signer sends to the sandbox, the platform accepts, and no secret leaves the page", async () => {
  const { page, requests } = s;
  const created = await platform.admin("POST", "/admin/v1/apps", { name: "signer e2e", scopes: ["channel_users", "health_reports"] });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const app = created.body.data;
  await page.goto("/portal/reference/signer");
  const before = requests.length;

  // Scheme M write: register a user through the signer.
  await fill(page, { appId: app.app_id, appKey: app.app_key, appSecret: app.app_secret, method: "POST", path: "/open/v1/channel/users", body: JSON.stringify({ channel_user_id: "e2e-1", user: { name: "Li Lei" } }), timestamp: "", nonce: "" });
  await page.getByLabel("Scheme", { exact: true }).selectOption("auto");
  await page.getByRole("button", { name: "Send to sandbox" }).click();
  await page.locator("#response-status").filter({ hasText: /^HTTP \d+$/ }).waitFor();
  assert.equal(await page.locator("#response-status").textContent(), "HTTP 201", await page.locator("#response-body").textContent());
  assert.match(await page.locator("#response-body").textContent(), /"open_user_id"/);
  await s.shot("signer-sent-scheme-m");

  // Scheme H read of a report that does not exist: 404 means the signature was accepted.
  await fill(page, { method: "GET", path: "/open/v1/health-reports/424242", nonce: "e2e-nonce-1" });
  await page.getByRole("button", { name: "Send to sandbox" }).click();
  await page.locator("#used-scheme").filter({ hasText: "Scheme H" }).waitFor();
  await page.locator("#response-status").filter({ hasText: /^HTTP \d+$/ }).waitFor();
  assert.equal(await page.locator("#response-status").textContent(), "HTTP 404", await page.locator("#response-body").textContent());

  // A wrong secret is refused by the platform, not by the page.
  await fill(page, { appSecret: "not-the-secret", method: "GET", path: "/open/v1/channel/users/0?channel_user_id=e2e-1", nonce: "" });
  await page.getByRole("button", { name: "Send to sandbox" }).click();
  await page.locator("#response-status").filter({ hasText: /^HTTP \d+$/ }).waitFor();
  assert.equal(await page.locator("#response-status").textContent(), "HTTP 401");

  const sent = requests.slice(before);
  const api = sent.filter((r) => new URL(r.url).pathname.startsWith("/open/"));
  assert.equal(api.length, 3, `API requests: ${api.map((r) => r.method + " " + r.url).join(", ")}`);
  for (const r of api) assert.equal(r.headers.cookie, undefined, `${r.url} carried the portal cookie`);
  for (const r of sent) {
    const all = [r.url, JSON.stringify(r.headers), r.postData || ""].join("\n");
    assert.ok(!all.includes(app.app_secret), `the app secret left the page in ${r.method} ${r.url}`);
    assert.ok(!all.includes("not-the-secret"), `the typed secret left the page in ${r.method} ${r.url}`);
  }
  assert.deepEqual(s.consoleErrors.filter((e) => /Content Security Policy|Refused/.test(e)), []);
});
