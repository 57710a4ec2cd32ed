// Every signer and verifier against the shared vectors, unchanged
// (../shared/vectors/signatures.json), and the plugin package's own vectors.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import {
  PluginHost,
  WebhookVerificationError,
  buildPluginLaunchUrl,
  decryptPluginProfile,
  encryptPluginProfile,
  parsePluginLaunchUrl,
  pluginProfileKey,
  schemeHSignString,
  signH,
  signM,
  signPluginLaunch,
  signWebhook,
  verifyWebhook,
} from "../dist/esm/index.js";
import { pluginVectorsPath, vectorsPath } from "./paths.mjs";

const v = JSON.parse(readFileSync(vectorsPath, "utf8"));
const { app_key, app_secret, webhook_secret, app_id } = v.credentials;
const raw = (c) => Buffer.from(c.body_base64, "base64");

test("vectors: body text and body_base64 agree (the file is read as intended)", () => {
  for (const c of [...v.scheme_m.cases, ...v.scheme_h.cases, ...v.webhook.cases]) {
    assert.deepEqual(raw(c), Buffer.from(c.body, "utf8"), c.name);
  }
});

test("scheme M: signM reproduces every vector from bytes and from text", () => {
  assert.ok(v.scheme_m.cases.length > 0);
  for (const c of v.scheme_m.cases) {
    assert.equal(signM(app_key, c.timestamp, app_secret, raw(c)), c.signature, c.name);
    assert.equal(signM(app_key, String(c.timestamp), app_secret, c.body), c.signature, c.name);
    assert.equal(c.headers["X-App-Id"], app_id);
    assert.equal(c.headers["X-Signature"], c.signature);
  }
  assert.notEqual(signM(app_key, v.scheme_m.cases[1].timestamp, app_secret, raw(v.scheme_m.cases[1]).subarray(1)), v.scheme_m.cases[1].signature);
});

test("scheme H: sign string and signature of every vector", () => {
  for (const c of v.scheme_h.cases) {
    const input = { method: c.method.toLowerCase(), uri: c.uri, timestamp: c.timestamp, nonce: c.nonce, body: raw(c) };
    assert.equal(schemeHSignString(input), c.sign_string, c.name);
    assert.equal(signH({ appSecret: app_secret, ...input }), c.signature, c.name);
  }
});

test("plugin launch: sign of every vector", () => {
  for (const c of v.plugin_launch.cases) {
    assert.equal(signPluginLaunch(app_secret, c.app_key, c.third_user_id, c.timestamp, c.nonce), c.signature, c.name);
  }
});

test("webhook: signWebhook and verifyWebhook accept each vector at valid_at and refuse it at stale_at", () => {
  for (const c of v.webhook.cases) {
    assert.equal(signWebhook(webhook_secret, c.timestamp, raw(c)), c.signature, c.name);
    verifyWebhook({ secret: webhook_secret, timestamp: String(c.timestamp), signature: c.signature, body: raw(c), now: c.valid_at });
    verifyWebhook({ secret: webhook_secret, timestamp: c.timestamp, signature: c.signature.toUpperCase(), body: raw(c), now: new Date(c.valid_at * 1000) });
    assert.throws(
      () => verifyWebhook({ secret: webhook_secret, timestamp: String(c.timestamp), signature: c.signature, body: raw(c), now: c.stale_at }),
      (e) => e instanceof WebhookVerificationError && e.reason === "timestamp_out_of_tolerance",
      c.name,
    );
  }
});

const pv = JSON.parse(readFileSync(pluginVectorsPath, "utf8"));

test("plugin package vectors: sign, profile key and ciphertext, decrypt, launch URL", () => {
  for (const c of pv.sign) assert.equal(signPluginLaunch(c.appSecret, c.appKey, c.thirdUserId, c.timestamp, c.nonce), c.sign);
  for (const c of pv.profile) {
    assert.equal(pluginProfileKey(c.appSecret).toString("hex"), c.key);
    const profile = JSON.parse(c.plaintext);
    assert.equal(encryptPluginProfile(c.appSecret, c.appKey, c.thirdUserId, profile, Buffer.from(c.iv, "hex")), c.userProfile);
    assert.deepEqual(decryptPluginProfile(c.appSecret, c.appKey, c.thirdUserId, c.userProfile), profile);
    assert.throws(() => decryptPluginProfile(c.appSecret, c.appKey, c.thirdUserId + "x", c.userProfile), /failed authentication/);
  }
  for (const c of pv.url) {
    assert.equal(buildPluginLaunchUrl(c.launch, { sandbox: c.sandbox }), c.url);
    assert.deepEqual(parsePluginLaunchUrl(c.url), { launch: c.launch, sandbox: c.sandbox });
    const host = new PluginHost({ appKey: c.launch.appKey, appSecret: c.appSecret });
    const profile = host.verifyLaunch(c.launch, Number(c.launch.timestamp) + 10);
    assert.equal(typeof profile, "object");
    assert.throws(() => host.verifyLaunch(c.launch, Number(c.launch.timestamp) + 301), /window/);
    assert.throws(() => host.verifyLaunch({ ...c.launch, nonce: c.launch.nonce + "0" }, Number(c.launch.timestamp)), /sign/);
  }
});
