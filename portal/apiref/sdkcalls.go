package apiref

// sdkCall is how each SDK calls one partner operation: one statement per
// language, `req` standing for the operation's request example decoded
// into the request model (Go, Java) or written as a literal (JavaScript,
// Python), `client` for the SDK's client. The method names are the SDKs'
// own: sdkcalls_test.go reads each SDK's sources (the Go client's
// operation table, the JavaScript and Java clients' methods named after
// the operationId, Python's OPERATION_METHODS) and fails when a snippet
// calls a method the SDK does not have or not the one it maps to the
// operation.
type sdkCall struct {
	Go, JS, Python, Java string
}

// sdkCalls covers every partner operation (a test checks both ways).
// Path parameters use the values of pathExamples, so the snippets and
// the curl example name the same resources.
var sdkCalls = map[string]sdkCall{
	// channel users
	"registerChannelUser": {
		Go:     "res, err := client.RegisterUser(ctx, req)",
		JS:     "const res = await client.registerChannelUser(req);",
		Python: "res = client.register_user(req)",
		Java:   "RegisterResult res = client.registerChannelUser(req);",
	},
	"getChannelUserSnapshot": {
		Go:     "res, err := client.GetSnapshot(ctx, 10001, partneropen.SnapshotQuery{})",
		JS:     "const res = await client.getChannelUserSnapshot(10001);",
		Python: "res = client.get_snapshot(10001)",
		Java:   "Snapshot res = client.getChannelUserSnapshot(10001L);",
	},
	"updateChannelUser": {
		Go:     "err := client.UpdateUser(ctx, 10001, req)",
		JS:     "await client.updateChannelUser(10001, req);",
		Python: "client.update_user(10001, req)",
		Java:   "client.updateChannelUser(10001L, req);",
	},
	"upsertFamilyGroup": {
		Go:     "res, err := client.UpsertFamilyGroup(ctx, 10001, req)",
		JS:     "const res = await client.upsertFamilyGroup(10001, req);",
		Python: "res = client.upsert_family_group(10001, req)",
		Java:   "FamilyGroupUpsertResult res = client.upsertFamilyGroup(10001L, req);",
	},
	"dissolveFamilyGroup": {
		Go:     "err := client.DissolveFamilyGroup(ctx, 10001, 501)",
		JS:     "await client.dissolveFamilyGroup(10001, 501);",
		Python: "client.dissolve_family_group(10001, 501)",
		Java:   "client.dissolveFamilyGroup(10001L, 501L);",
	},
	"upsertFamilyMember": {
		Go:     "res, err := client.UpsertFamilyMember(ctx, 10001, req)",
		JS:     "const res = await client.upsertFamilyMember(10001, req);",
		Python: "res = client.upsert_family_member(10001, req)",
		Java:   "FamilyMemberUpsertResult res = client.upsertFamilyMember(10001L, req);",
	},
	"deleteFamilyMember": {
		Go:     "err := client.DeleteFamilyMember(ctx, 10001, 701)",
		JS:     "await client.deleteFamilyMember(10001, 701);",
		Python: "client.delete_family_member(10001, 701)",
		Java:   "client.deleteFamilyMember(10001L, 701L);",
	},
	"acknowledgeErasure": {
		Go:     "res, err := client.AcknowledgeErasure(ctx, 10001)",
		JS:     "const res = await client.acknowledgeErasure(10001);",
		Python: "res = client.acknowledge_erasure(10001)",
		Java:   "ErasureAcknowledgement res = client.acknowledgeErasure(10001L);",
	},
	"listMyAccessLog": {
		Go:     "res, err := client.ListAccessLog(ctx, partneropen.AccessLogFilter{OpenUserID: 10001})",
		JS:     "const res = await client.listMyAccessLog({ open_user_id: 10001 });",
		Python: "res = client.list_access_log(open_user_id=10001)",
		Java:   "AccessLogPage res = client.listMyAccessLog(10001L, null, null, null, null);",
	},
	// webhooks: delivery log, endpoints, replays, secrets, feed
	"listMyDeliveries": {
		Go:     `res, err := client.ListDeliveries(ctx, partneropen.DeliveryFilter{Status: "abandoned"})`,
		JS:     `const res = await client.listMyDeliveries({ status: "abandoned" });`,
		Python: `res = client.list_deliveries(status="abandoned")`,
		Java:   "PartnerClient.DeliveryQuery q = new PartnerClient.DeliveryQuery();\nq.status = \"abandoned\";\nDeliveryPage res = client.listMyDeliveries(q, null);",
	},
	"getMyDelivery": {
		Go:     `res, err := client.GetDelivery(ctx, "3f2b8c1e-5d6a-5b7c-9e0f-1a2b3c4d5e6f")`,
		JS:     `const res = await client.getMyDelivery("3f2b8c1e-5d6a-5b7c-9e0f-1a2b3c4d5e6f");`,
		Python: `res = client.get_delivery("3f2b8c1e-5d6a-5b7c-9e0f-1a2b3c4d5e6f")`,
		Java:   `DeliveryDetail res = client.getMyDelivery("3f2b8c1e-5d6a-5b7c-9e0f-1a2b3c4d5e6f");`,
	},
	"resendMyDelivery": {
		Go:     `res, err := client.ResendDelivery(ctx, "3f2b8c1e-5d6a-5b7c-9e0f-1a2b3c4d5e6f")`,
		JS:     `const res = await client.resendMyDelivery("3f2b8c1e-5d6a-5b7c-9e0f-1a2b3c4d5e6f");`,
		Python: `res = client.resend_delivery("3f2b8c1e-5d6a-5b7c-9e0f-1a2b3c4d5e6f")`,
		Java:   `ResendResult res = client.resendMyDelivery("3f2b8c1e-5d6a-5b7c-9e0f-1a2b3c4d5e6f");`,
	},
	"listMyWebhookEndpoints": {
		Go:     "res, err := client.ListWebhookEndpoints(ctx)",
		JS:     "const res = await client.listMyWebhookEndpoints();",
		Python: "res = client.list_webhook_endpoints()",
		Java:   "WebhookEndpointList res = client.listMyWebhookEndpoints();",
	},
	"createMyWebhookEndpoint": {
		Go:     "res, err := client.CreateWebhookEndpoint(ctx, req)",
		JS:     "const res = await client.createMyWebhookEndpoint(req);",
		Python: "res = client.create_webhook_endpoint(req)",
		Java:   "NewWebhookEndpoint res = client.createMyWebhookEndpoint(req);",
	},
	"getMyWebhookEndpoint": {
		Go:     "res, err := client.GetWebhookEndpoint(ctx, 12)",
		JS:     "const res = await client.getMyWebhookEndpoint(12);",
		Python: "res = client.get_webhook_endpoint(12)",
		Java:   "WebhookEndpoint res = client.getMyWebhookEndpoint(12L);",
	},
	"updateMyWebhookEndpoint": {
		Go:     "res, err := client.UpdateWebhookEndpoint(ctx, 12, req)",
		JS:     "const res = await client.updateMyWebhookEndpoint(12, req);",
		Python: "res = client.update_webhook_endpoint(12, req)",
		Java:   "WebhookEndpoint res = client.updateMyWebhookEndpoint(12L, req);",
	},
	"deleteMyWebhookEndpoint": {
		Go:     "err := client.DeleteWebhookEndpoint(ctx, 12)",
		JS:     "await client.deleteMyWebhookEndpoint(12);",
		Python: "client.delete_webhook_endpoint(12)",
		Java:   "client.deleteMyWebhookEndpoint(12L);",
	},
	"rotateMyWebhookEndpointSecret": {
		Go:     "res, err := client.RotateWebhookEndpointSecret(ctx, 12)",
		JS:     "const res = await client.rotateMyWebhookEndpointSecret(12);",
		Python: "res = client.rotate_webhook_endpoint_secret(12)",
		Java:   "RotatedWebhookEndpoint res = client.rotateMyWebhookEndpointSecret(12L);",
	},
	"activateMyWebhookEndpointSecret": {
		Go:     "res, err := client.ActivateWebhookEndpointSecret(ctx, 12)",
		JS:     "const res = await client.activateMyWebhookEndpointSecret(12);",
		Python: "res = client.activate_webhook_endpoint_secret(12)",
		Java:   "WebhookEndpoint res = client.activateMyWebhookEndpointSecret(12L);",
	},
	"sendMyWebhookEndpointTest": {
		Go:     "res, err := client.SendWebhookEndpointTest(ctx, 12)",
		JS:     "const res = await client.sendMyWebhookEndpointTest(12);",
		Python: "res = client.send_webhook_endpoint_test(12)",
		Java:   "WebhookTestQueued res = client.sendMyWebhookEndpointTest(12L);",
	},
	"requestWebhookReplay": {
		Go:     "res, err := client.ReplayWebhooks(ctx, req)",
		JS:     "const res = await client.requestWebhookReplay(req);",
		Python: "res = client.replay_webhooks(req)",
		Java:   "WebhookReplay res = client.requestWebhookReplay(req);",
	},
	"getWebhookReplay": {
		Go:     "res, err := client.GetWebhookReplay(ctx, 3)",
		JS:     "const res = await client.getWebhookReplay(3);",
		Python: "res = client.get_webhook_replay(3)",
		Java:   "WebhookReplay res = client.getWebhookReplay(3L);",
	},
	"cancelWebhookReplay": {
		Go:     "res, err := client.CancelWebhookReplay(ctx, 3)",
		JS:     "const res = await client.cancelWebhookReplay(3);",
		Python: "res = client.cancel_webhook_replay(3)",
		Java:   "WebhookReplay res = client.cancelWebhookReplay(3L);",
	},
	"rotateMyWebhookSecret": {
		Go:     "res, err := client.RotateWebhookSecret(ctx)",
		JS:     "const res = await client.rotateMyWebhookSecret();",
		Python: "res = client.rotate_webhook_secret()",
		Java:   "PendingWebhookSecret res = client.rotateMyWebhookSecret();",
	},
	"activateMyWebhookSecret": {
		Go:     "res, err := client.ActivateWebhookSecret(ctx)",
		JS:     "const res = await client.activateMyWebhookSecret();",
		Python: "res = client.activate_webhook_secret()",
		Java:   "WebhookSecretActivated res = client.activateMyWebhookSecret();",
	},
	"webhookEventFeed": {
		Go:     `res, err := client.WaitEvents(ctx, "1042-1042", 100, partneropen.MaxFeedWait)`,
		JS:     `const res = await client.webhookEventFeed({ after: "1042-1042", limit: 100, wait: 20 });`,
		Python: `res = client.list_events(after="1042-1042", limit=100, wait=20)`,
		Java:   `FeedPage res = client.webhookEventFeed("1042-1042", 100, 20);`,
	},
	"triggerSandboxEvent": {
		Go:     `res, err := client.TriggerSandboxEvent(ctx, "health.report.created")`,
		JS:     "const res = await client.triggerSandboxEvent(req);",
		Python: `res = client.trigger_sandbox_event("health.report.created")`,
		Java:   "SandboxEventTriggered res = client.triggerSandboxEvent(req);",
	},
	// health reports, OAuth, plugin sandbox
	"pullHealthReport": {
		Go:     "res, err := client.PullHealthReport(ctx, 20001)",
		JS:     "const res = await client.pullHealthReport(20001);",
		Python: "res = client.pull_health_report(20001)",
		Java:   "HealthReport res = client.pullHealthReport(20001L);",
	},
	"getDailyReport": {
		Go:     "tok, err := client.Token(ctx)\nif err != nil {\n\treturn err\n}\nres, err := client.DailyReport(ctx, tok.AccessToken, partneropen.DailyReportQuery{OpenUserID: 10001, Date: \"2024-05-01\"})",
		JS:     `const res = await client.getDailyReport({ open_user_id: 10001, date: "2024-05-01" }); // fetches and caches the token`,
		Python: `res = client.get_daily_report(open_user_id=10001, date="2024-05-01")  # fetches and caches the token`,
		Java:   `DailyReport res = client.getDailyReport(10001L, null, "2024-05-01"); // fetches and caches the token`,
	},
	"oauthToken": {
		Go:     "res, err := client.Token(ctx)",
		JS:     "const res = await client.oauthToken();",
		Python: "res = client.fetch_access_token()",
		Java:   "TokenResponse res = client.oauthToken();",
	},
	"oauthRevoke": {
		Go:     `err := client.RevokeToken(ctx, "8kq3Zr0vJ2xWm5NfT7bYc1Lp9sHdQ4eA6uGiK0oRjVw")`,
		JS:     `await client.oauthRevoke("8kq3Zr0vJ2xWm5NfT7bYc1Lp9sHdQ4eA6uGiK0oRjVw");`,
		Python: `client.revoke_access_token("8kq3Zr0vJ2xWm5NfT7bYc1Lp9sHdQ4eA6uGiK0oRjVw")`,
		Java:   `client.oauthRevoke("8kq3Zr0vJ2xWm5NfT7bYc1Lp9sHdQ4eA6uGiK0oRjVw");`,
	},
	"sandboxMockMeasure": {
		Go:     "res, err := client.SandboxMockMeasure(ctx, req)",
		JS:     "const res = await client.sandboxMockMeasure(req);",
		Python: "res = client.sandbox_mock_measure(req)",
		Java:   "Measurement res = client.sandboxMockMeasure(req);",
	},
	// orders
	"createOrder": {
		Go:     "res, err := client.CreateOrder(ctx, req)",
		JS:     "const res = await client.createOrder(req);",
		Python: "res = client.create_order(req)",
		Java:   "OrderCreateResult res = client.createOrder(req);",
	},
	"getOrderDetail": {
		Go:     `res, err := client.GetOrder(ctx, "PO202405011042")`,
		JS:     `const res = await client.getOrderDetail("PO202405011042");`,
		Python: `res = client.get_order("PO202405011042")`,
		Java:   `Order res = client.getOrderDetail("PO202405011042");`,
	},
	"sandboxShippedCallbackTest": {
		Go:     "res, err := client.SandboxShipOrder(ctx, req)",
		JS:     "const res = await client.sandboxShippedCallbackTest(req);",
		Python: "res = client.sandbox_ship_order(req)",
		Java:   "ShipmentResult res = client.sandboxShippedCallbackTest(req);",
	},
	// benefit cards
	"registerOwnServiceProvider": {
		Go:     "res, err := client.RegisterServiceProvider(ctx, req)",
		JS:     "const res = await client.registerOwnServiceProvider(req);",
		Python: "res = client.register_service_provider(req)",
		Java:   "ProviderRegistered res = client.registerOwnServiceProvider(req);",
	},
	"batchIssueBenefitCards": {
		Go:     "res, err := client.BatchIssueCards(ctx, req)",
		JS:     "const res = await client.batchIssueBenefitCards(req);",
		Python: "res = client.batch_issue_benefit_cards(req)",
		Java:   "IssuedCards res = client.batchIssueBenefitCards(req);",
	},
	"verifyBenefitUse": {
		Go:     "res, err := client.VerifyUse(ctx, req)",
		JS:     "const res = await client.verifyBenefitUse(req);",
		Python: "res = client.verify_benefit_use(req)",
		Java:   "VerifyUseResult res = client.verifyBenefitUse(req);",
	},
	"getBenefitCard": {
		Go:     `res, err := client.GetBenefitCard(ctx, "100000000000042")`,
		JS:     `const res = await client.getBenefitCard("100000000000042");`,
		Python: `res = client.get_benefit_card("100000000000042")`,
		Java:   `Card res = client.getBenefitCard("100000000000042");`,
	},
	"listFulfillments": {
		Go:     `res, err := client.ListFulfillments(ctx, "provider", 0, 100)`,
		JS:     `const res = await client.listFulfillments({ role: "provider", limit: 100 });`,
		Python: `res = client.list_fulfillments(role="provider", limit=100)`,
		Java:   `FulfillmentList res = client.listFulfillments("provider", null, 100);`,
	},
	"rateFulfillment": {
		Go:     "res, err := client.RateFulfillment(ctx, 9, req)",
		JS:     "const res = await client.rateFulfillment(9, req);",
		Python: "res = client.rate_fulfillment(9, req)",
		Java:   "RatingResult res = client.rateFulfillment(9L, req);",
	},
	// The event catalog is public and built into every SDK (generated
	// from the same catalog the route serves): no request is needed.
	"listEventTypes": {
		Go:     "for _, t := range partneropen.EventTypes { // no request: the SDK carries the catalog\n\tfmt.Println(t.Name, t.Version)\n}",
		JS:     "for (const t of eventTypes) console.log(t.name, t.version); // no request: the SDK carries the catalog",
		Python: "for t in EVENT_CATALOG:  # no request: the SDK carries the catalog\n    print(t.name, t.version)",
		Java:   "for (EventTypes.EventType t : EventTypes.ALL) { // no request: the SDK carries the catalog\n  System.out.println(t.getName() + \" \" + t.getVersion());\n}",
	},
	"getEventType": {
		Go:     "known := partneropen.IsEventType(\"health.report.created\") // the SDK's copy of the catalog\nfmt.Println(known)",
		JS:     `const known = isCataloguedEventType("health.report.created"); // the SDK's copy of the catalog`,
		Python: `known = is_catalogued_event_type("health.report.created")  # the SDK's copy of the catalog`,
		Java:   `boolean known = EventTypes.isCatalogued("health.report.created"); // the SDK's copy of the catalog`,
	},
}

// pathExamples are the path parameter values the curl examples use when
// the document gives none, the same values as in sdkCalls.
var pathExamples = map[string]string{
	"openUserId":   "10001",
	"groupId":      "501",
	"memberId":     "701",
	"endpointId":   "12",
	"replayId":     "3",
	"recordId":     "9",
	"openReportId": "20001",
	"type":         "health.report.created",
}
