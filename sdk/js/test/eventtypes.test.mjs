// The platform's event catalog: every catalogued type's example body (the
// dispatcher's renderer made it) parses into its typed event.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { WebhookPayloadError, eventTypes, isCataloguedEventType, parseWebhookEvent, webhookEvents } from "../dist/esm/index.js";
import { repoRoot } from "./paths.mjs";

test("eventTypes: every catalogued type's example parses, and the catalog is the typed events", () => {
  assert.ok(eventTypes.length >= 11);
  for (const t of eventTypes) {
    const body = readFileSync(join(repoRoot, "internal", "eventtypes", "examples", `${t.name}.v${t.version}.json`));
    const ev = parseWebhookEvent(body);
    assert.equal(ev.event, t.name);
    assert.ok(ev.delivery_id.length > 0);
    assert.ok(isCataloguedEventType(t.name));
  }
  assert.deepEqual([...webhookEvents].sort(), eventTypes.map((t) => t.name).sort());
  assert.ok(!isCataloguedEventType("health.report.deleted"));
  assert.throws(() => parseWebhookEvent('{"event":"health.report.deleted","delivery_id":"d"}'), WebhookPayloadError);
});
