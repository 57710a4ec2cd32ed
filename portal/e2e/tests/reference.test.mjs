// The API reference split per tag, in headless Chromium against a real
// platform: the index leads to a tag page; an operation's examples are
// tabs whose language choice is remembered on the next page; a copy
// button puts the example on the clipboard, and the copied curl lines,
// run by bash, are accepted by the platform (scheme M and scheme H); a
// former anchor of the one-page reference leads to its new page; the
// operators' reference is not shown to partners. Page heights are logged
// and bounded.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, before, test } from "node:test";
import { join } from "node:path";
import { openSession, screenshotDir } from "./browser.mjs";
import { startPlatform } from "./platform.mjs";

let platform;
let s;

before(async () => {
  platform = await startPlatform();
  s = await openSession(platform.baseUrl, "reference");
  await s.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: platform.baseUrl });
});

after(async () => {
  await s?.close();
  await platform?.stop();
});

const height = () => s.page.evaluate(() => document.documentElement.scrollHeight);

/** Runs copied shell lines with the app's credentials; returns the parsed answer. */
function runShell(code, app) {
  const out = execFileSync("bash", ["--noprofile", "--norc", "-euo", "pipefail", "-c", code], {
    env: { PATH: process.env.PATH, PLATFORM_URL: platform.baseUrl, APP_ID: String(app.app_id), APP_KEY: app.app_key, APP_SECRET: app.app_secret },
    encoding: "utf8",
    timeout: 20000,
  });
  return JSON.parse(out);
}

test("index, tag page, language tabs remembered, copy, and the copied curl works", async () => {
  const { page } = s;
  await page.goto("/portal/reference");
  await page.getByRole("heading", { level: 1, name: "API reference" }).waitFor();
  assert.equal(await page.locator("main a[href^='/portal/ops/reference']").count(), 0, "a partner page links the operators' reference");
  assert.equal(await page.getByText("/admin/v1/apps", { exact: true }).count(), 0, "an admin operation on the partner index");
  const heights = { "/portal/reference": await height() };
  await s.shot("index");

  await page.getByRole("link", { name: "channel-users", exact: true }).click();
  await page.waitForURL(/\/portal\/reference\/channel-users$/);
  await page.getByRole("heading", { level: 1, name: "channel-users · API reference" }).waitFor();
  heights["/portal/reference/channel-users"] = await height();
  await s.shot("channel-users");

  // The register operation's examples: curl first, then the SDK tabs.
  const op = page.locator("#op-registerchanneluser");
  const tabs = op.getByRole("tab");
  assert.deepEqual(await tabs.allTextContents(), ["curl", "Go", "JavaScript", "Python", "Java"]);
  assert.equal(await op.getByRole("tab", { name: "curl" }).getAttribute("aria-selected"), "true");
  await op.getByRole("tab", { name: "Python" }).click();
  const python = op.locator(".example-panel[data-lang=python]");
  assert.ok(await python.isVisible());
  assert.ok(!(await op.locator(".example-panel[data-lang=curl]").isVisible()), "curl still shown beside Python");
  assert.match(await python.innerText(), /client\.register_user\(req\)/);
  // Every operation on the page switched with it.
  assert.ok(await page.locator("#op-getchannelusersnapshot .example-panel[data-lang=python]").isVisible());
  await op.scrollIntoViewIfNeeded();
  await s.shot("register-python");

  // Copy: the button says so, and the clipboard holds the example.
  await python.getByRole("button", { name: "Copy python example" }).click();
  await python.getByRole("status").filter({ hasText: "Copied" }).waitFor();
  const copiedPython = await page.evaluate(() => navigator.clipboard.readText());
  assert.match(copiedPython, /^req = \{\n/);
  assert.match(copiedPython, /res = client\.register_user\(req\)$/);
  await s.shot("register-copied");

  // Error answers are folded: status and codes in sight, details on demand.
  const unprocessable = op.locator("details.resp-error", { hasText: "422" });
  assert.match(await unprocessable.locator("summary").innerText(), /VALIDATION_ERROR/);
  await unprocessable.locator("summary").click();
  await unprocessable.locator("summary").scrollIntoViewIfNeeded();
  await s.shot("register-responses");

  // The choice is remembered on another tag page.
  await page.goto("/portal/reference/orders");
  assert.equal(await page.locator("#op-createorder").getByRole("tab", { name: "Python" }).getAttribute("aria-selected"), "true");
  heights["/portal/reference/orders"] = await height();
  await s.shot("orders-python");

  // The copied curl lines, run as they are, are accepted: scheme M.
  const created = await platform.admin("POST", "/admin/v1/apps", { name: "reference e2e", scopes: ["channel_users", "plugin"] });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const app = created.body.data;
  await page.goto("/portal/reference/channel-users#op-registerchanneluser");
  await op.getByRole("tab", { name: "curl" }).click();
  await op.locator(".example-panel[data-lang=curl]").getByRole("button", { name: "Copy curl example" }).click();
  const curlM = await page.evaluate(() => navigator.clipboard.readText());
  assert.match(curlM, /openssl dgst -md5/);
  const registered = runShell(curlM, app);
  assert.equal(registered.success, true, JSON.stringify(registered));
  assert.ok(registered.data.open_user_id > 0);

  // Scheme H: the sandbox mock measurement of the plugin page.
  await page.goto("/portal/reference/plugin");
  heights["/portal/reference/plugin"] = await height();
  const mock = page.locator("#op-sandboxmockmeasure");
  assert.equal(await mock.getByRole("tab", { name: "curl" }).getAttribute("aria-selected"), "true", "the curl choice is remembered");
  await mock.locator(".example-panel[data-lang=curl]").getByRole("button", { name: "Copy curl example" }).click();
  const curlH = await page.evaluate(() => navigator.clipboard.readText());
  assert.match(curlH, /openssl dgst -sha256 -hmac/);
  const measured = runShell(curlH, app);
  assert.equal(measured.success, true, JSON.stringify(measured));
  await mock.scrollIntoViewIfNeeded();
  await s.shot("plugin-curl");

  // A former anchor of the one-page reference leads to its page.
  await page.goto("/portal/reference#op-createorder");
  await page.waitForURL(/\/portal\/reference\/orders#op-createorder$/);
  await page.goto("/portal/reference#schema-registerrequest");
  await page.waitForURL(/\/portal\/reference\/schemas#schema-registerrequest$/);

  for (const p of ["webhooks", "benefits", "health-reports", "oauth", "webhook-events", "schemas"]) {
    await page.goto(`/portal/reference/${p}`);
    heights[`/portal/reference/${p}`] = await height();
  }
  await page.goto("/portal/reference/webhooks");
  await s.shot("webhooks");
  console.log("reference page heights (px):", JSON.stringify(heights));
  for (const [p, h] of Object.entries(heights)) {
    if (p.endsWith("/schemas")) continue; // every named schema, for reading by link
    assert.ok(h < 30000, `${p} is ${h} px tall`);
  }

  // Without the script every example is shown, one after the other, and
  // no copy button pretends to work.
  const plain = await s.context.newPage();
  await plain.route("**/reference.js", (r) => r.abort());
  await plain.goto("/portal/reference/channel-users");
  const panels = plain.locator("#op-registerchanneluser .example-panel");
  assert.equal(await panels.count(), 5);
  for (let i = 0; i < 5; i++) assert.ok(await panels.nth(i).isVisible(), `example ${i} hidden without JavaScript`);
  assert.equal(await plain.locator("button.copy").count(), 0);
  await plain.locator("#op-registerchanneluser").scrollIntoViewIfNeeded();
  await plain.screenshot({ path: join(screenshotDir, "reference-no-js.png") });
  await plain.close();

  // The operators' reference is for operators only.
  const refused = await page.goto("/portal/ops/reference");
  assert.match(page.url(), /\/portal\/ops\/signin/);
  assert.equal(refused.status(), 200);
});

test("operators find their reference in their navigation", async () => {
  const ops = await openSession(platform.baseUrl, "reference-operator");
  try {
    await ops.page.goto("/portal/ops/signin");
    await ops.page.getByLabel("Operator token", { exact: true }).fill(platform.adminToken);
    await Promise.all([ops.page.waitForNavigation(), ops.page.getByRole("button", { name: "Sign in", exact: true }).click()]);
    await ops.page.getByRole("link", { name: "Admin API reference" }).click();
    await ops.page.getByRole("heading", { level: 1, name: "Operators' API reference" }).waitFor();
    await ops.shot("ops-index");
    await ops.page.getByRole("link", { name: "admin", exact: true }).click();
    await ops.page.getByText("/admin/v1/apps", { exact: true }).first().waitFor();
    console.log("operators' admin page height (px):", await ops.page.evaluate(() => document.documentElement.scrollHeight));
    await ops.shot("ops-admin");
  } finally {
    await ops.close();
  }
});
