// Issue 14's whole flow as people do it, in headless Chromium against a real
// embedded platform and a loopback webhook receiver: a developer signs up,
// an operator approves the developer, the developer creates an app, adds an
// endpoint pointing at the receiver, sends a test event, sees it delivered
// in the log, resends it, requests production review, an operator approves
// and the developer reveals the production credentials. Plus the refusals:
// a wrong password, a forged form without its CSRF token (refused, and it
// changed nothing), and another developer's app by URL (the same 404 page as
// a missing app). Every page visited is saved as a screenshot.
import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { after, before, test } from "node:test";
import { openSession } from "./browser.mjs";
import { startPlatform, startReceiver, waitFor } from "./platform.mjs";

let platform;
let receiver;
const sessions = [];

before(async () => {
  receiver = await startReceiver();
  // Plain http on loopback: the session cookie cannot be Secure here.
  platform = await startPlatform({ PLATFORM_PORTAL_INSECURE_COOKIES: "on" });
});

after(async () => {
  for (const s of sessions) await s.close();
  await platform?.stop();
  await receiver?.stop();
});

async function session(who) {
  const s = await openSession(platform.baseUrl, who);
  sessions.push(s);
  return s;
}

/** Goes to path, expects status, checks the portal's headers, and saves a screenshot. */
async function visit(s, path, name, status = 200) {
  const res = await s.page.goto(path);
  assert.equal(res.status(), status, `GET ${path}`);
  assertPortalHeaders(res.headers(), path);
  await s.shot(name);
  return res;
}

function assertPortalHeaders(h, what) {
  const csp = h["content-security-policy"] || "";
  assert.match(csp, /script-src 'self'/, `${what}: CSP`);
  assert.doesNotMatch(csp, /script-src[^;]*unsafe-inline/, `${what}: CSP allows inline script`);
  assert.match(csp, /frame-ancestors 'none'/, `${what}: CSP framing`);
  assert.equal(h["x-frame-options"], "DENY", `${what}: X-Frame-Options`);
  assert.equal(h["x-content-type-options"], "nosniff", `${what}: nosniff`);
  assert.ok(h["referrer-policy"], `${what}: Referrer-Policy`);
}

/** Clicks a submit button and waits for the page the POST leads to; returns its last response. */
async function submit(s, name, { status, shot } = {}) {
  const responses = [];
  const onResponse = (r) => {
    if (r.request().isNavigationRequest()) responses.push(r);
  };
  s.page.on("response", onResponse);
  try {
    await Promise.all([s.page.waitForNavigation(), s.page.getByRole("button", { name, exact: true }).click()]);
    await s.page.waitForLoadState("domcontentloaded");
  } finally {
    s.page.off("response", onResponse);
  }
  const last = responses[responses.length - 1];
  if (status !== undefined) assert.equal(last?.status(), status, `after "${name}": ${responses.map((r) => r.status() + " " + r.url()).join(", ")}`);
  if (last) assertPortalHeaders(last.headers(), `after "${name}"`);
  if (shot) await s.shot(shot);
  return last;
}

const field = (s, label) => s.page.getByLabel(label, { exact: true });
const text = (s) => s.page.locator("main").innerText();

/** The portal's session cookie: HttpOnly and SameSite; not Secure only because this test runs on plain http. */
async function assertSessionCookie(s) {
  const cookies = await s.context.cookies();
  assert.ok(cookies.length > 0, "no cookie after sign-in");
  for (const c of cookies) {
    assert.equal(c.httpOnly, true, `cookie ${c.name} is not HttpOnly`);
    assert.ok(c.sameSite === "Lax" || c.sameSite === "Strict", `cookie ${c.name} SameSite=${c.sameSite}`);
  }
}

/** Scheme M request from Node (the shared vectors' rule), to check credentials from outside the browser. */
async function schemeM(app, method, path, body = "") {
  const ts = String(Math.floor(Date.now() / 1000));
  const sig = createHash("md5").update(app.appKey + ts + app.appSecret + body, "utf8").digest("hex");
  const res = await fetch(platform.baseUrl + path, {
    method,
    headers: { "X-App-Id": String(app.appId), "X-Timestamp": ts, "X-Signature": sig, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body || undefined,
  });
  return res.status;
}

/** Reads the credentials a one-time page shows: the app id, the AppKey and the secrets by their labels. */
async function shownCredentials(s) {
  const appId = (await s.page.locator(".credentials .app-id").first().innerText()).trim();
  const appKey = (await s.page.locator(".credentials .app-key").first().innerText()).trim();
  const secrets = {};
  for (const region of await s.page.locator(".secret").all()) {
    secrets[(await region.getAttribute("aria-label")).trim()] = (await region.locator(".secret-value").innerText()).trim();
  }
  return { appId, appKey, secrets };
}

function secretNamed(secrets, re) {
  const k = Object.keys(secrets).find((n) => re.test(n));
  assert.ok(k, `no secret matching ${re} among ${Object.keys(secrets).join(", ")}`);
  return secrets[k];
}

test("issue 14 flow: sign-up to production, with the refusals", async (t) => {
  const email = `dev-${Date.now()}@example.com`;
  const password = "correct horse battery staple 14";
  const dev = await session("developer");
  const ops = await session("operator");
  const state = {};

  const step = (name, fn) =>
    t.test(name, async () => {
      try {
        await fn();
      } catch (e) {
        for (const s of [dev, ops]) {
          try {
            await s.shot(`FAILED-${name.replace(/[^a-z0-9]+/gi, "-").slice(0, 40)}`);
          } catch {
            /* the browser may be gone */
          }
        }
        if (!state.logShown) {
          state.logShown = true;
          console.error(`--- platform log (tail) ---\n${platform.log().slice(-4000)}`);
        }
        throw e;
      }
    });

  await step("a developer signs up and waits for review", async () => {
    await visit(dev, "/portal/signup", "signup");
    await dev.page.getByRole("heading", { level: 1, name: "Create a developer account" }).waitFor();
    await field(dev, "Email").fill(email);
    await field(dev, "Password").fill(password);
    // Sign-up signs nobody in: it answers "check your mail" (the same page
    // for an address that already has an account), then the developer signs in.
    await submit(dev, "Sign up", { status: 200, shot: "signup-check-mail" });
    await dev.page.getByRole("heading", { level: 1, name: "Check your mail" }).waitFor();
    state.signUpText = await text(dev);
    // The account is opened in the background after the page answered:
    // its welcome mail in the outbox says it exists.
    await waitFor("the welcome mail", async () => {
      const res = await platform.admin("GET", "/admin/v1/outbox");
      return res.status === 200 && JSON.stringify(res.body).includes(email);
    });
    await visit(dev, "/portal/signin", "signin-after-signup");
    await field(dev, "Email").fill(email);
    await field(dev, "Password").fill(password);
    await submit(dev, "Sign in", { status: 200, shot: "dashboard-pending" });
    assert.match(await text(dev), /pending/i);
    await assertSessionCookie(dev);
  });

  await step("a wrong password is refused", async () => {
    await submit(dev, "Sign out", { status: 200 });
    await visit(dev, "/portal/signin", "signin");
    await field(dev, "Email").fill(email);
    await field(dev, "Password").fill("not the password");
    await submit(dev, "Sign in", { status: 401, shot: "signin-wrong-password" });
    assert.match(await text(dev), /Email or password is wrong/);
    await field(dev, "Email").fill(email);
    await field(dev, "Password").fill(password);
    await submit(dev, "Sign in", { status: 200, shot: "dashboard-signed-in" });
    await dev.page.getByRole("heading", { level: 1, name: "Dashboard" }).waitFor();
  });

  await step("an operator signs in and approves the developer", async () => {
    await visit(ops, "/portal/ops/signin", "ops-signin");
    await field(ops, "Operator token").fill(platform.adminToken);
    await submit(ops, "Sign in", { status: 200, shot: "ops-developers" });
    await ops.page.getByRole("heading", { level: 1, name: "Developer review" }).waitFor();
    const row = ops.page.locator("tr", { hasText: email });
    const id = (await row.locator("td").first().innerText()).trim();
    state.developerId = id;
    await field(ops, `Reason for developer ${id}`).fill("documents checked");
    await submit(ops, `Approve developer ${id}`, { status: 200, shot: "ops-developer-approved" });
    await visit(dev, "/portal/", "dashboard-approved");
    assert.match(await text(dev), /Status: approved/);
  });

  await step("a sign-up with a taken address answers alike and mails the owner", async () => {
    const intruder = await session("intruder");
    await visit(intruder, "/portal/signup", "intruder-signup");
    await field(intruder, "Email").fill(email);
    await field(intruder, "Password").fill("an intruder's password");
    await submit(intruder, "Sign up", { status: 200, shot: "signup-taken-check-mail" });
    assert.equal(await text(intruder), state.signUpText, "a taken address answers unlike a new one");
    await visit(intruder, "/portal/", "intruder-not-signed-in");
    await intruder.page.getByRole("heading", { level: 1, name: "Developer portal" }).waitFor();
    await waitFor("the sign-up notice in the outbox", async () => {
      await visit(ops, "/portal/ops/outbox", "ops-outbox-signup-notice");
      return /Someone tried to sign up with your address/.test(await text(ops));
    });
    assert.match(await text(ops), /\/portal\/password\/reset\?token=/);
  });

  await step("the developer creates an app and sees its credentials once", async () => {
    await visit(dev, "/portal/apps/new", "app-new");
    await field(dev, "Name").fill("E2E health app");
    await field(dev, "Purpose").fill("Browser test of the developer portal");
    for (const scope of ["channel_users", "webhooks", "health_reports"]) await field(dev, scope).check();
    await submit(dev, "Create application", { status: 201, shot: "app-credentials" });
    const creds = await shownCredentials(dev);
    assert.match(creds.appId, /^\d+$/);
    state.app = { appId: creds.appId, appKey: creds.appKey, appSecret: secretNamed(creds.secrets, /^app ?secret$/i) };
    // The sandbox credentials work against the API (404: signature accepted, no such user).
    assert.equal(await schemeM(state.app, "GET", "/open/v1/channel/users/0?channel_user_id=nobody"), 404);
    // Shown once: the application page shows the app id and key, never the secret.
    await visit(dev, `/portal/apps/${state.app.appId}`, "app-page");
    const page = await dev.page.content();
    assert.ok(page.includes(state.app.appId) && page.includes(state.app.appKey));
    assert.ok(!page.includes(state.app.appSecret), "the app secret is shown again on the app page");
  });

  await step("a forged form without its CSRF token is refused and changes nothing", async () => {
    await visit(dev, `/portal/apps/${state.app.appId}`, "app-page-before-forgery");
    const [res] = await Promise.all([
      dev.page.waitForResponse((r) => r.request().method() === "POST" && r.url().endsWith(`/portal/apps/${state.app.appId}/secret`)),
      dev.page.evaluate((action) => {
        const f = document.createElement("form");
        f.method = "post";
        f.action = action;
        document.body.appendChild(f);
        f.submit();
      }, `/portal/apps/${state.app.appId}/secret`),
    ]);
    assert.equal(res.status(), 403);
    await dev.page.waitForLoadState("domcontentloaded");
    await dev.shot("csrf-refused");
    assert.match(await text(dev), /did not come from this portal|expired/i);
    // Nothing was rotated: the secret shown at creation still signs.
    assert.equal(await schemeM(state.app, "GET", "/open/v1/channel/users/0?channel_user_id=nobody"), 404);
  });

  await step("another developer's app by URL is the same 404 as a missing one", async () => {
    const other = await session("other-developer");
    await visit(other, "/portal/signup", "other-signup");
    const otherEmail = `other-${Date.now()}@example.com`;
    await field(other, "Email").fill(otherEmail);
    await field(other, "Password").fill("another long password 14");
    await submit(other, "Sign up", { status: 200 });
    await waitFor("the other developer's welcome mail", async () => {
      const res = await platform.admin("GET", "/admin/v1/outbox");
      return res.status === 200 && JSON.stringify(res.body).includes(otherEmail);
    });
    await visit(other, "/portal/signin", "other-signin");
    await field(other, "Email").fill(otherEmail);
    await field(other, "Password").fill("another long password 14");
    await submit(other, "Sign in", { status: 200 });
    const theirs = await visit(other, `/portal/apps/${state.app.appId}`, "other-app-by-url", 404);
    const theirsText = await text(other);
    const missing = await visit(other, "/portal/apps/987654321", "missing-app", 404);
    assert.equal(theirsText, await text(other), "another developer's app answers unlike a missing one");
    assert.equal(theirs.status(), missing.status());
    assert.ok(!(await other.page.content()).includes(state.app.appKey));
  });

  // ---- webhook endpoints, test event, delivery log, resend ----
  await step("the developer adds an endpoint pointing at the local receiver", async () => {
    assert.ok(state.app, "needs the app step");
    await visit(dev, `/portal/apps/${state.app.appId}/endpoints`, "endpoints");
    // The default endpoint (the app's webhook, no URL yet) is shown with the secret that signs it.
    const def = await dev.page.locator("#endpoint-0").innerText();
    assert.ok(def.includes("Default endpoint (id 0)") && def.includes("signs with the app's webhook secret"), `default endpoint: ${def}`);
    await field(dev, "Endpoint URL").fill(receiver.url);
    await submit(dev, "Add endpoint", { status: 200, shot: "endpoint-secret" });
    const region = dev.page.locator(".secret");
    const label = (await region.getAttribute("aria-label")).trim();
    const m = /^Webhook secret of endpoint (\d+)$/.exec(label);
    assert.ok(m, `secret label ${label}`);
    state.endpointId = m[1];
    state.webhookSecret = (await region.locator(".secret-value").innerText()).trim();
    // Shown once: the endpoint list does not show it again.
    await visit(dev, `/portal/apps/${state.app.appId}/endpoints`, "endpoints-with-one");
    const row = await dev.page.locator(`#endpoint-${state.endpointId}`).innerText();
    assert.ok(row.includes(receiver.url) && row.includes("its own secret"), `endpoint row: ${row}`);
    assert.ok(!(await dev.page.content()).includes(state.webhookSecret), "the webhook secret is shown again");
  });

  await step("a test event is delivered to the receiver and shows in the log", async () => {
    assert.ok(state.endpointId, "needs the endpoint step");
    const before = receiver.received.length;
    // The app's page leads to the endpoints, each endpoint's log and a test event.
    await visit(dev, `/portal/apps/${state.app.appId}`, "app-webhooks");
    const links = dev.page.locator("section[aria-labelledby=webhooks-h]");
    assert.equal(await links.getByRole("link", { name: `Webhook endpoints of application ${state.app.appId}` }).count(), 1);
    assert.equal(await links.getByRole("link", { name: `Delivery log of endpoint ${state.endpointId}` }).count(), 1);
    await submit(dev, `Send test event to endpoint ${state.endpointId}`, { status: 200, shot: "test-event-sent" });
    const got = await waitFor("the test event at the receiver", () => receiver.received.slice(before).find((r) => r.headers["x-webhook-id"]));
    const expected = createHmacHex(state.webhookSecret, `${got.headers["x-webhook-timestamp"]}.${got.body}`);
    assert.equal(got.headers["x-webhook-signature"], expected, "the test event is not signed with the endpoint's secret");
    state.deliveryId = got.headers["x-webhook-id"];
    const log = `/portal/apps/${state.app.appId}/endpoints/${state.endpointId}/deliveries`;
    await waitFor("the delivery log to show the delivery as delivered", async () => {
      await dev.page.goto(log);
      const d = dev.page.locator(`#delivery-${state.deliveryId}`);
      return (await d.count()) > 0 && (await d.locator(".delivery-status").innerText()).trim() === "delivered";
    });
    await dev.page.getByRole("heading", { level: 1, name: `Delivery log of endpoint ${state.endpointId}` }).waitFor();
    const attempt = dev.page.locator(`#delivery-${state.deliveryId} tr.attempt`).first();
    assert.equal((await attempt.locator(".status-code").innerText()).trim(), "204");
    // The payload opens in place; the last 24 hours are drawn above.
    const delivery = dev.page.locator(`#delivery-${state.deliveryId}`);
    assert.equal(await delivery.locator(".payload-body").isVisible(), false, "the payload is open before asked");
    await delivery.getByText(`Payload of delivery ${state.deliveryId}`).click();
    assert.ok((await delivery.locator(".payload-body").innerText()).includes(`"delivery_id": "${state.deliveryId}"`), "the payload is not the delivery's body");
    assert.match(await dev.page.locator(".health-summary").innerText(), /100\.0% of \d+ attempts delivered/);
    assert.ok(await dev.page.locator("svg.chart").isVisible(), "no chart of the last 24 hours");
    assert.match(await text(dev), /Times are shown in UTC\+08:00 \(Asia\/Shanghai\)/);
    await dev.shot("delivery-log");
  });

  await step("the developer resends the delivery and the receiver gets it again", async () => {
    assert.ok(state.deliveryId, "needs the test event step");
    const before = receiver.received.length;
    await submit(dev, `Resend delivery ${state.deliveryId}`, { status: 200, shot: "delivery-resent" });
    const again = await waitFor("the resent delivery at the receiver", () => receiver.received.slice(before).find((r) => r.headers["x-webhook-id"] === state.deliveryId));
    assert.equal(again.headers["x-webhook-signature"], createHmacHex(state.webhookSecret, `${again.headers["x-webhook-timestamp"]}.${again.body}`));
    await waitFor("the log to show a second attempt", async () => {
      await dev.page.goto(`/portal/apps/${state.app.appId}/endpoints/${state.endpointId}/deliveries`);
      return (await dev.page.locator(`#delivery-${state.deliveryId} tr.attempt`).count()) >= 2;
    });
    await dev.shot("delivery-log-resent");
  });

  await step("deleting an endpoint asks first; Cancel keeps it", async () => {
    assert.ok(state.endpointId, "needs the endpoint step");
    const list = `/portal/apps/${state.app.appId}/endpoints`;
    await visit(dev, list, "endpoints-before-delete");
    await submit(dev, `Delete endpoint ${state.endpointId}`, { status: 200, shot: "delete-confirm" });
    await dev.page.getByRole("heading", { level: 1, name: `Confirm: Delete endpoint ${state.endpointId}?` }).waitFor();
    await Promise.all([dev.page.waitForNavigation(), dev.page.getByRole("link", { name: "Cancel", exact: true }).click()]);
    assert.equal(await dev.page.locator(`#endpoint-${state.endpointId}`).count(), 1, "Cancel deleted the endpoint");
    await submit(dev, `Delete endpoint ${state.endpointId}`, { status: 200 });
    await submit(dev, `Delete endpoint ${state.endpointId}`, { status: 200, shot: "endpoint-deleted" });
    assert.equal(await dev.page.locator(`#endpoint-${state.endpointId}`).count(), 0, "the confirmed delete left the endpoint");
  });

  // ---- production review (engineer E's pages) ----
  await step("the developer requests production review", async () => {
    await visit(dev, `/portal/apps/${state.app.appId}`, "app-before-review");
    await submit(dev, "Request production review", { status: 200, shot: "review-requested" });
    assert.match(await text(dev), /within 5 business days/);
  });

  await step("an operator approves the application", async () => {
    await visit(ops, "/portal/ops/apps", "ops-apps");
    await ops.page.getByRole("heading", { level: 1, name: "Application review" }).waitFor();
    await field(ops, `Reason for application ${state.app.appId}`).fill("sandbox integration verified");
    const approve = ops.page.getByRole("button", { name: `Approve application ${state.app.appId}`, exact: true });
    const reject = ops.page.getByRole("button", { name: `Reject application ${state.app.appId}`, exact: true });
    const colour = (b) => b.evaluate((el) => getComputedStyle(el).backgroundColor);
    assert.notEqual(await colour(approve), await colour(reject), "Approve and Reject look alike");
    await submit(ops, `Approve application ${state.app.appId}`, { status: 200, shot: "ops-app-approved" });
    // Decided: no buttons any more, the decision with who and when.
    assert.equal(await approve.count(), 0, "Approve is still offered after the decision");
    const decided = await ops.page.locator(`#decided-${state.app.appId}`).innerText();
    assert.match(decided, /approved/);
    assert.match(decided, /operator:/);
    assert.match(decided, /\+08:00/);
  });

  await step("the developer reveals the production credentials; the sandbox set is retired", async () => {
    await visit(dev, `/portal/apps/${state.app.appId}`, "app-approved");
    assert.match(await text(dev), /approved/i);
    // Revealing retires the sandbox app: the portal asks first.
    await submit(dev, "Reveal production credentials", { status: 200, shot: "reveal-confirm" });
    await dev.page.getByRole("heading", { level: 1, name: `Confirm: Reveal the production credentials of application ${state.app.appId}?` }).waitFor();
    await submit(dev, "Reveal production credentials", { status: 200, shot: "production-credentials" });
    const prod = await shownCredentials(dev);
    assert.notEqual(prod.appId, state.app.appId, "production has its own app id");
    const production = { appId: prod.appId, appKey: prod.appKey, appSecret: secretNamed(prod.secrets, /^app ?secret$/i) };
    assert.equal(await schemeM(production, "GET", "/open/v1/channel/users/0?channel_user_id=nobody"), 404, "production credentials do not work");
    assert.equal(await schemeM(state.app, "GET", "/open/v1/channel/users/0?channel_user_id=nobody"), 401, "the retired sandbox credentials still work");
    await visit(dev, "/portal/apps", "apps-after-production");
  });

  await step("the developer's actions are in the audit trail with the developer as actor", async () => {
    assert.ok(state.developerId && state.app, "needs the sign-up and app steps");
    const actor = `developer:${state.developerId}`;
    const res = await platform.admin("GET", `/admin/v1/audit?actor=${encodeURIComponent(actor)}&limit=1000`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const facts = res.body.data.facts;
    const actions = new Set(facts.map((f) => f.action));
    for (const f of facts) assert.equal(f.actor, actor, `the actor filter returned ${f.actor}`);
    for (const want of ["developer.signed_up", "developer.signed_in", "app.created", "app.webhook_endpoint_added", "app.webhook_test_requested", "webhook.delivery.resend_requested"]) {
      assert.ok(actions.has(want), `no ${want} by ${actor} in the audit trail: ${[...actions].join(", ")}`);
    }
    // The forged rotation appended nothing.
    assert.ok(!actions.has("app.secret_rotated"), "the forged POST without a CSRF token rotated the secret");
    // The app's own history (what the operator's history page reads) has
    // the review request and the reveal by the developer, the approval by
    // the operator.
    const hist = await platform.admin("GET", `/admin/v1/history?stream=app-${state.app.appId}`);
    assert.equal(hist.status, 200, JSON.stringify(hist.body));
    const byActor = hist.body.data.events.map((e) => `${e.type} by ${e.metadata.actor}`);
    for (const want of [`app.review_requested by ${actor}`, `app.production_credentials_revealed by ${actor}`]) {
      assert.ok(byActor.includes(want), `app history lacks ${want}: ${byActor.join(", ")}`);
    }
    assert.ok(byActor.some((e) => e.startsWith("app.reviewed by operator:")), `app history lacks the operator's approval: ${byActor.join(", ")}`);
  });

  // The refusals above load 401, 403 and 404 pages on purpose, which the
  // console reports; anything else (a CSP violation, a script error) fails.
  for (const s of [dev, ops]) {
    const errors = s.consoleErrors.filter((e) => !/^Failed to load resource: the server responded with a status of (401|403|404)\b/.test(e));
    assert.deepEqual(errors, [], `${s === dev ? "developer" : "operator"} browser errors`);
  }
});

function createHmacHex(secret, text) {
  return createHmac("sha256", secret).update(text, "utf8").digest("hex");
}
