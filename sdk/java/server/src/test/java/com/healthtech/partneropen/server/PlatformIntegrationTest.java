package com.healthtech.partneropen.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.healthtech.partneropen.PartnerApiException;
import com.healthtech.partneropen.json.Json;
import com.healthtech.partneropen.model.Delivery;
import com.healthtech.partneropen.model.FamilyGroupInput;
import com.healthtech.partneropen.model.FamilyMemberRegisterInput;
import com.healthtech.partneropen.model.FamilyMemberUpsertInput;
import com.healthtech.partneropen.model.FamilyMemberUpsertResult;
import com.healthtech.partneropen.model.Fulfillment;
import com.healthtech.partneropen.model.HealthReport;
import com.healthtech.partneropen.model.HealthReportWebhook;
import com.healthtech.partneropen.model.Order;
import com.healthtech.partneropen.model.OrderCreateRequest;
import com.healthtech.partneropen.model.OrderCreateResult;
import com.healthtech.partneropen.model.OrderItemInput;
import com.healthtech.partneropen.model.ProviderRegistered;
import com.healthtech.partneropen.model.ProviderRegistration;
import com.healthtech.partneropen.model.RegisterRequest;
import com.healthtech.partneropen.model.RegisterResult;
import com.healthtech.partneropen.model.Relationship;
import com.healthtech.partneropen.model.Snapshot;
import com.healthtech.partneropen.model.UserPatch;
import com.healthtech.partneropen.model.UserProfile;
import com.healthtech.partneropen.model.VerifyUseRequest;
import com.healthtech.partneropen.model.VerifyUseResult;
import com.healthtech.partneropen.webhook.WebhookEvent;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A partner's day against the real platform: $PLATFORM_BIN (built from ./cmd/platform when unset) started on a
 * free loopback port with a fresh data directory, set up through the admin API, then driven only through the SDK.
 */
class PlatformIntegrationTest {
  static Path work;
  static Process platform;
  static String base;
  static String adminToken;
  static HttpServer receiver;
  /** Received webhooks per receiver path (one path per app, so each test verifies only its app's deliveries). */
  static final Map<String, LinkedBlockingQueue<Map<String, Object>>> hooks = new java.util.concurrent.ConcurrentHashMap<>();

  @BeforeAll
  static void startPlatform() throws Exception {
    work = Files.createTempDirectory("partner-sdk-java-it");
    Path root = VectorsTest.repoRoot();
    String bin = System.getenv("PLATFORM_BIN");
    if (bin == null || bin.isEmpty()) {
      bin = work.resolve("platform").toString();
      Process b = new ProcessBuilder("go", "build", "-o", bin, "./cmd/platform").directory(root.toFile())
          .inheritIO().start();
      assertTrue(b.waitFor(600, TimeUnit.SECONDS) && b.exitValue() == 0, "go build ./cmd/platform failed");
    }
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    byte[] t = new byte[24];
    new SecureRandom().nextBytes(t);
    adminToken = Signatures.hex(t);
    ProcessBuilder pb = new ProcessBuilder(bin).directory(work.toFile())
        .redirectErrorStream(true).redirectOutput(work.resolve("platform.log").toFile());
    Map<String, String> env = pb.environment();
    env.keySet().removeIf(k -> k.startsWith("PLATFORM_"));
    env.put("PLATFORM_ADDR", "127.0.0.1:" + port);
    env.put("PLATFORM_DATA_DIR", work.resolve("data").toString());
    env.put("PLATFORM_ADMIN_TOKEN", adminToken);
    env.put("PLATFORM_WEBHOOK_ALLOW_LOOPBACK", "on");
    env.put("PLATFORM_WEBHOOK_RETRY_SCHEDULE", "1s,1s,1s");
    platform = pb.start();
    base = "http://127.0.0.1:" + port;
    for (int i = 0; i < 600; i++) { // bounded: at most ~60 s
      if (!platform.isAlive()) {
        fail("platform exited early:\n" + log());
      }
      try {
        if (raw("GET", "/readyz", null, null).status == 200) {
          break;
        }
      } catch (IOException notYet) {
        // not listening yet
      }
      if (i == 599) {
        fail("platform not ready after 60 s:\n" + log());
      }
      Thread.sleep(100);
    }
    receiver = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    receiver.setExecutor(Executors.newFixedThreadPool(2));
    receiver.createContext("/", ex -> {
      byte[] body = ex.getRequestBody().readAllBytes();
      Map<String, Object> h = new HashMap<>();
      h.put("body", body);
      h.put("id", ex.getRequestHeaders().getFirst("X-Webhook-Id"));
      h.put("event", ex.getRequestHeaders().getFirst("X-Webhook-Event"));
      h.put("timestamp", ex.getRequestHeaders().getFirst("X-Webhook-Timestamp"));
      h.put("signature", ex.getRequestHeaders().getFirst("X-Webhook-Signature"));
      queue(ex.getRequestURI().getPath()).add(h);
      ex.sendResponseHeaders(204, -1);
      ex.close();
    });
    receiver.start();
  }

  @AfterAll
  static void stopPlatform() throws Exception {
    if (receiver != null) {
      receiver.stop(0);
      ((ExecutorService) receiver.getExecutor()).shutdownNow();
    }
    if (platform != null) {
      platform.destroy();
      if (!platform.waitFor(10, TimeUnit.SECONDS)) {
        platform.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    }
    if (work != null) {
      try (Stream<Path> s = Files.walk(work)) {
        s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  static String log() {
    try {
      List<String> lines = Files.readAllLines(work.resolve("platform.log"));
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  record Raw(int status, byte[] body) {}

  static Raw raw(String method, String path, String bearer, Object body) throws IOException {
    HttpURLConnection c = (HttpURLConnection) new URL(base + path).openConnection();
    c.setConnectTimeout(2000);
    c.setReadTimeout(30000);
    c.setRequestMethod(method);
    if (bearer != null) {
      c.setRequestProperty("Authorization", "Bearer " + bearer);
    }
    if (body != null) {
      c.setDoOutput(true);
      c.setRequestProperty("Content-Type", "application/json");
      try (OutputStream os = c.getOutputStream()) {
        os.write(Json.writeBytes(body));
      }
    }
    int status = c.getResponseCode();
    InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    if (in != null) {
      in.transferTo(out);
      in.close();
    }
    return new Raw(status, out.toByteArray());
  }

  /** An operator or uploader call; returns the envelope's data. */
  @SuppressWarnings("unchecked")
  static Map<String, Object> admin(String method, String path, String token, Object body) throws IOException {
    Raw r = raw(method, path, token, body);
    assertTrue(r.status / 100 == 2, method + " " + path + " -> " + r.status + " "
        + new String(r.body, StandardCharsets.UTF_8));
    return (Map<String, Object>) ((Map<String, Object>) Json.parse(r.body)).get("data");
  }

  static LinkedBlockingQueue<Map<String, Object>> queue(String path) {
    return hooks.computeIfAbsent(path, k -> new LinkedBlockingQueue<>());
  }

  static String hookUrl(String path) {
    return "http://127.0.0.1:" + receiver.getAddress().getPort() + path;
  }

  /** Waits (bounded) for a webhook of the event, verifying every webhook received on the way with the SDK. */
  static WebhookEvent awaitHook(String path, String secret, String event) throws Exception {
    return awaitHook(path, secret, event, null);
  }

  /** As above, and (when deliveryId is given) only that delivery counts. */
  static WebhookEvent awaitHook(String path, String secret, String event, String deliveryId) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      Map<String, Object> h = queue(path).poll(500, TimeUnit.MILLISECONDS);
      if (h == null) {
        continue;
      }
      byte[] body = (byte[]) h.get("body");
      Webhooks.verify(secret, (String) h.get("timestamp"), (String) h.get("signature"), body);
      WebhookEvent e = WebhookEvent.parse(body);
      assertEquals(h.get("event"), e.getType());
      assertEquals(h.get("id"), e.getDeliveryId());
      assertTrue(e.isKnown(), "every event the platform sends is typed: " + e.getType());
      if (event.equals(e.getType()) && (deliveryId == null || deliveryId.equals(e.getDeliveryId()))) {
        return e;
      }
    }
    fail("no " + event + " webhook within 60 s:\n" + log());
    return null;
  }

  @Test
  @SuppressWarnings("unchecked")
  void aPartnersDay() throws Exception {
    // --- operator setup ---
    Map<String, Object> app = admin("POST", "/admin/v1/apps", adminToken, Map.of(
        "name", "sdk-java-day",
        "webhook_url", hookUrl("/hooks/day"),
        "scopes", List.of("channel_users", "orders", "health_reports", "webhooks", "benefits", "daily_report",
            "plugin")));
    String webhookSecret = (String) app.get("webhook_secret");
    long appId = (Long) app.get("app_id");
    admin("POST", "/admin/v1/goods", adminToken, Map.of("goods_code", "BP-100", "goods_name", "BP monitor"));
    String uploader = (String) admin("POST", "/admin/v1/uploaders", adminToken, Map.of("name", "east")).get("token");

    PartnerClient client = PartnerClient.builder(base)
        .appId(String.valueOf(appId))
        .appKey((String) app.get("app_key"))
        .appSecret((String) app.get("app_secret"))
        .build();

    // --- register with family, idempotently ---
    RegisterRequest reg = new RegisterRequest()
        .setChannelUserId("cu-java-1")
        .setUser(new UserProfile().setName("李雷").setPhone("13812345678").setGender("male"))
        .setFamilyGroups(List.of(new FamilyGroupInput().setAppGroupId(1L).setName("Home")))
        .setFamilyMembers(List.of(new FamilyMemberRegisterInput().setAppUserId("m-self").setAppGroupId(1L)
            .setName("李雷").setRelationship(Relationship.SELF).setHeight(175L)));
    RegisterResult r = client.registerChannelUser(reg);
    assertTrue(r.getCreated());
    long uid = r.getOpenUserId();
    assertEquals(1, r.getFamilyGroups().size());
    RegisterResult again = client.registerChannelUser(reg);
    assertFalse(again.getCreated());
    assertEquals(uid, again.getOpenUserId());

    // --- upsert a member, patch the user, read the snapshot ---
    FamilyMemberUpsertResult mum = client.upsertFamilyMember(uid, new FamilyMemberUpsertInput().setAppUserId("m-mum")
        .setAppGroupId(1L).setName("Mum").setRelationship(Relationship.MOTHER).setBirthDate("1960-03-04"));
    assertTrue(mum.getCreated());
    FamilyMemberUpsertResult mum2 = client.upsertFamilyMember(uid, new FamilyMemberUpsertInput()
        .setAppUserId("m-mum").setAppGroupId(1L).setName("Mother").setRelationship(Relationship.MOTHER));
    assertFalse(mum2.getCreated());
    assertEquals(mum.getMemberId(), mum2.getMemberId());
    client.updateChannelUser(uid, new UserPatch().setNickname("Lei"));
    Snapshot snap = client.getChannelUserSnapshot(uid);
    assertEquals("李雷", snap.getUser().getName());
    assertEquals("Lei", snap.getUser().getNickname());
    assertEquals("138****5678", snap.getUser().getPhone());
    assertEquals(2, snap.getFamilyMembers().size());
    assertTrue(snap.getFamilyMembers().stream().anyMatch(m -> "Mother".equals(m.getName())));

    // --- an order ---
    OrderCreateResult order = client.createOrder(new OrderCreateRequest().setThirdOrderId("T-1")
        .setContactPerson("Li").setContactPhone("13812345678").setAddress("1 Road").setUserId(uid)
        .setItems(List.of(new OrderItemInput().setGoodsCode("BP-100").setQuantity(2L).setUnitPrice(1999L))));
    Order detail = client.getOrderDetail(order.getOrderCode());
    assertEquals("PENDING_REVIEW", detail.getOrderStatus());
    assertEquals(3998L, detail.getItems().get(0).getTotalPrice());
    client.sandboxShippedCallbackTest(new com.healthtech.partneropen.model.SandboxShipmentRequest()
        .setOrderCode(order.getOrderCode()));
    WebhookEvent shipped = awaitHook("/hooks/day", webhookSecret, WebhookEvent.ORDER_SHIPPED);
    assertEquals(order.getOrderCode(), shipped.asOrderShipped().getOrderCode());
    assertEquals("SHIPPED", client.getOrderDetail(order.getOrderCode()).getOrderStatus());

    // --- a report: ingested, announced by a verified webhook, pulled with scheme H ---
    Map<String, Object> rawData = Map.of("data_type", "indicators",
        "indicators", List.of(Map.of("code", "SBP", "value", 120L, "unit", "mmHg")));
    long reportId = (Long) admin("POST", "/admin/v1/health-reports", uploader, Map.of("open_user_id", uid,
        "report_type", "BLOOD_PRESSURE", "request_report_id", "R-1", "raw_data", rawData)).get("id");
    WebhookEvent created = awaitHook("/hooks/day", webhookSecret, WebhookEvent.HEALTH_REPORT_CREATED);
    HealthReportWebhook hw = created.asHealthReport();
    assertEquals(reportId, hw.getOpenReportId());
    assertEquals("cu-java-1", hw.getChannelUserId());
    HealthReport report = client.pullHealthReport(hw.getOpenReportId());
    assertEquals(reportId, report.getId());
    assertEquals("BLOOD_PRESSURE", report.getReportType());
    assertEquals(rawData, report.getRawData());

    // --- the delivery log has that delivery ---
    boolean found = false;
    for (Delivery d : client.iterateMyDeliveries(null)) {
      found |= d.getDeliveryId().equals(created.getDeliveryId());
    }
    assertTrue(found, "delivery " + created.getDeliveryId() + " in the delivery log");

    // --- benefit card: provider registered by the partner, approved and configured by operators, verify-use ---
    ProviderRegistered prov = client.registerOwnServiceProvider(new ProviderRegistration().setName("Clinic")
        .setType("SERVICE_PROVIDER").setContact("ops@example.com"));
    long item = (Long) admin("POST", "/admin/v1/benefit-items", adminToken, Map.of("name", "Check-up"))
        .get("benefit_item_id");
    admin("POST", "/admin/v1/service-providers/" + prov.getProviderId() + "/review", adminToken,
        Map.of("decision", "approve"));
    admin("PUT", "/admin/v1/service-providers/" + prov.getProviderId() + "/benefit-items", adminToken,
        Map.of("allowed_benefit_item_ids", List.of(item)));
    Map<String, Object> card = ((List<Map<String, Object>>) admin("POST", "/admin/v1/benefit-cards", adminToken,
        Map.of("issuer_app_id", appId, "cards", List.of(Map.of("holder_name", "Li", "holder_phone", "13812345678",
            "expires_at", "2099-12-31T23:59:59", "items", List.of(Map.of("benefit_item_id", item,
                "quantity", 3L)))))).get("cards")).get(0);
    String cardNumber = (String) card.get("card_number");
    long ubi = (Long) ((List<Map<String, Object>>) card.get("items")).get(0).get("user_benefit_item_id");
    VerifyUseResult used = client.verifyBenefitUse(new VerifyUseRequest().setCardNumber(cardNumber)
        .setUserBenefitItemId(ubi).setQuantity(1L).setRemark("java sdk"));
    assertEquals(2L, used.getRemainingQuantity());
    assertEquals(1L, used.getQuantityUsed());
    List<Long> records = new ArrayList<>();
    for (Fulfillment f : client.iterateFulfillments("provider")) {
      records.add(f.getFulfillmentRecordId());
    }
    assertEquals(List.of(used.getFulfillmentRecordId()), records);
    assertEquals(2L, client.getBenefitCard(cardNumber).getItems().get(0).getRemainingQuantity());
    assertEquals(5L, client.rateFulfillment(used.getFulfillmentRecordId(),
        new com.healthtech.partneropen.model.RatingRequest().setRating(5L)).getRating());
    PartnerApiException rated = assertThrows(PartnerApiException.class, () -> client.rateFulfillment(
        used.getFulfillmentRecordId(), new com.healthtech.partneropen.model.RatingRequest().setRating(4L)));
    assertEquals(409, rated.getStatus());
    assertEquals("ALREADY_RATED", rated.getCode());
    PartnerApiException dup = assertThrows(PartnerApiException.class, () -> client.verifyBenefitUse(
        new VerifyUseRequest().setCardNumber(cardNumber).setUserBenefitItemId(ubi)));
    assertEquals(422, dup.getStatus());
    assertEquals("DUPLICATE_FULFILLMENT", dup.getCode());

    // --- delete a member, dissolve the group ---
    client.deleteFamilyMember(uid, mum.getMemberId());
    assertEquals(1, client.getChannelUserSnapshot(uid).getFamilyMembers().size());
    client.dissolveFamilyGroup(uid, r.getFamilyGroups().get(0).getFamilyGroupId());
    Snapshot after = client.getChannelUserSnapshot(uid);
    assertEquals(0, after.getFamilyGroups().size());
    assertEquals(0, after.getFamilyMembers().size());

    // --- errors surface as the typed error ---
    PartnerApiException missing = assertThrows(PartnerApiException.class,
        () -> client.getChannelUserSnapshot(uid + 100000));
    assertEquals(404, missing.getStatus());
    assertEquals("USER_NOT_FOUND", missing.getCode());
    assertNotNull(missing.getRequestId());
    PartnerApiException invalid = assertThrows(PartnerApiException.class, () -> client.registerChannelUser(
        new RegisterRequest().setChannelUserId("cu-bad").setUser(new UserProfile().setName("x").setPhone("123"))));
    assertEquals(422, invalid.getStatus());
    assertEquals("VALIDATION_ERROR", invalid.getCode());
    assertTrue(invalid.getFieldErrors().containsKey("user.phone"), invalid.getFieldErrors().toString());
    PartnerClient wrongSecret = PartnerClient.builder(base).appId(String.valueOf(appId))
        .appKey((String) app.get("app_key")).appSecret("wrong").retryPolicy(RetryPolicy.none()).build();
    PartnerApiException unauth = assertThrows(PartnerApiException.class, () -> wrongSecret.getChannelUserSnapshot(uid));
    assertEquals(401, unauth.getStatus());
    assertEquals("HTTP_401", unauth.getCode()); // scheme H refused: the route's own 401
    PartnerClient wrongSecretM = PartnerClient.builder(base).appId(String.valueOf(appId))
        .appKey((String) app.get("app_key")).appSecret("wrong").scheme(PartnerClient.Scheme.M)
        .retryPolicy(RetryPolicy.none()).build();
    PartnerApiException unauthM = assertThrows(PartnerApiException.class,
        () -> wrongSecretM.getChannelUserSnapshot(uid));
    assertEquals(401, unauthM.getStatus());
    assertEquals("HTTP_401", unauthM.getCode());
    PartnerApiException unauthH = assertThrows(PartnerApiException.class, () -> wrongSecret.pullHealthReport(reportId));
    assertEquals(401, unauthH.getStatus());
  }

  static PartnerClient clientFor(Map<String, Object> app) {
    return PartnerClient.builder(base).appId(String.valueOf(app.get("app_id"))).appKey((String) app.get("app_key"))
        .appSecret((String) app.get("app_secret")).build();
  }

  /**
   * The default client signs scheme H: a register, a snapshot read and a bodyless DELETE signed in one second (the
   * clock is pinned, so all carry one X-Timestamp) all succeed. Scheme M by option still works.
   */
  @Test
  void schemeHByDefaultInOneSecondAndSchemeMByOption() throws Exception {
    Map<String, Object> app = admin("POST", "/admin/v1/apps", adminToken, Map.of("name", "sdk-java-schemes"));
    long pinned = System.currentTimeMillis();
    PartnerClient h = PartnerClient.builder(base).appId(String.valueOf(app.get("app_id")))
        .appKey((String) app.get("app_key")).appSecret((String) app.get("app_secret")).clock(() -> pinned).build();
    assertEquals(PartnerClient.Scheme.H, h.getScheme());
    RegisterResult r = h.registerChannelUser(new RegisterRequest().setChannelUserId("cu-h-1")
        .setUser(new UserProfile().setName("Han"))
        .setFamilyGroups(List.of(new FamilyGroupInput().setAppGroupId(1L).setName("Home")))
        .setFamilyMembers(List.of(new FamilyMemberRegisterInput().setAppUserId("m1").setAppGroupId(1L)
            .setName("Han").setRelationship(Relationship.SELF))));
    assertTrue(r.getCreated());
    assertEquals(1, h.getChannelUserSnapshot(r.getOpenUserId()).getFamilyMembers().size());
    h.deleteFamilyMember(r.getOpenUserId(), r.getFamilyMembers().get(0).getMemberId());
    assertEquals(0, h.getChannelUserSnapshot(r.getOpenUserId()).getFamilyMembers().size());

    // Scheme M in one second: the read and the bodyless DELETE share a signature, and both succeed.
    long pinnedM = System.currentTimeMillis();
    PartnerClient m = PartnerClient.builder(base).appId(String.valueOf(app.get("app_id")))
        .appKey((String) app.get("app_key")).appSecret((String) app.get("app_secret"))
        .scheme(PartnerClient.Scheme.M).clock(() -> pinnedM).build();
    RegisterResult r2 = m.registerChannelUser(new RegisterRequest().setChannelUserId("cu-m-1")
        .setUser(new UserProfile().setName("Wang"))
        .setFamilyGroups(List.of(new FamilyGroupInput().setAppGroupId(2L).setName("G"))));
    assertTrue(r2.getCreated());
    FamilyMemberUpsertResult kid = m.upsertFamilyMember(r2.getOpenUserId(), new FamilyMemberUpsertInput()
        .setAppUserId("k").setAppGroupId(2L).setName("Kid").setRelationship(Relationship.SON));
    assertTrue(kid.getCreated());
    assertEquals(1, m.getChannelUserSnapshot(r2.getOpenUserId()).getFamilyMembers().size());
    m.deleteFamilyMember(r2.getOpenUserId(), kid.getMemberId());
    assertEquals(0, m.getChannelUserSnapshot(r2.getOpenUserId()).getFamilyMembers().size());
  }

  /** The sandbox plugin mock, the daily report through OAuth, the feed, resend, and webhook secret rotation. */
  @Test
  void sandboxDailyReportFeedResendAndSecretRotation() throws Exception {
    String path = "/hooks/sandbox";
    Map<String, Object> app = admin("POST", "/admin/v1/apps", adminToken, Map.of("name", "sdk-java-sandbox",
        "webhook_url", hookUrl(path), "scopes", List.of("channel_users", "health_reports", "webhooks",
            "daily_report", "plugin")));
    String secret = (String) app.get("webhook_secret");
    PartnerClient client = clientFor(app);
    String uploader = (String) admin("POST", "/admin/v1/uploaders", adminToken, Map.of("name", "w")).get("token");
    long uid = client.registerChannelUser(new RegisterRequest().setChannelUserId("cu-s")
        .setUser(new UserProfile().setName("Han"))).getOpenUserId();

    // sandbox mock measurement -> plugin.report.ready, verified and typed
    com.healthtech.partneropen.model.Measurement m = client.sandboxMockMeasure(
        new com.healthtech.partneropen.model.MockMeasureRequest().setAppKey((String) app.get("app_key"))
            .setThirdUserId("third-88").setDeviceKey("HOME_MULTI_BIO_MONITOR").setMeasureMode("BP"));
    assertNotNull(m.getMeasureId());
    WebhookEvent ready = awaitHook(path, secret, WebhookEvent.PLUGIN_REPORT_READY);
    assertEquals("third-88", ready.asPluginReportReady().getThirdUserId());
    assertEquals(m.getMeasureId(), ready.asPluginReportReady().getMeasurementNo());

    // daily report: a report with a heart-rate indicator, read with the OAuth token flow
    admin("POST", "/admin/v1/health-reports", uploader, Map.of("open_user_id", uid, "raw_data",
        Map.of("indicators", List.of(Map.of("code", "heart_rate", "value", 72L, "unit", "bpm")))));
    com.healthtech.partneropen.model.DailyReport daily = null;
    for (int i = 0; i < 100; i++) { // the read model catches up asynchronously: bounded wait
      daily = client.getDailyReport(uid, null, null);
      if (daily.getHeartRate() != null) {
        break;
      }
      Thread.sleep(100);
    }
    assertNotNull(daily.getHeartRate(), "heart rate counted in the daily report");
    assertEquals(72.0, daily.getHeartRate().getAvg());
    com.healthtech.partneropen.model.TokenResponse tok = client.oauthToken();
    client.oauthRevoke(tok.getAccessToken());
    assertEquals(72.0, client.getDailyReport(null, "cu-s", null).getHeartRate().getAvg(),
        "after a revoke the client fetches a new token");

    // the feed has the plugin event, typed; resend delivers the same delivery id again
    com.healthtech.partneropen.model.FeedEvent inFeed = null;
    for (com.healthtech.partneropen.model.FeedEvent fe : client.iterateWebhookEvents(null)) {
      if (fe.getDeliveryId().equals(ready.getDeliveryId())) {
        inFeed = fe;
      }
    }
    assertNotNull(inFeed, "plugin.report.ready in the feed");
    assertEquals(m.getMeasureId(), inFeed.getPayload().asPluginReportReady().getMeasurementNo());
    assertEquals(WebhookEvent.PLUGIN_REPORT_READY, client.getMyDelivery(ready.getDeliveryId()).getPayload().getType());
    // A delivery still pending (its attempt's outcome not yet recorded) is not queued again: queued=false.
    com.healthtech.partneropen.model.ResendResult resent = null;
    for (int i = 0; i < 100; i++) { // bounded: ~10 s
      resent = client.resendMyDelivery(ready.getDeliveryId());
      if (Boolean.TRUE.equals(resent.getQueued())) {
        break;
      }
      Thread.sleep(100);
    }
    assertEquals(ready.getDeliveryId(), resent.getDeliveryId());
    assertTrue(resent.getQueued(), "resend queued once the first attempt was recorded");
    try {
      awaitHook(path, secret, WebhookEvent.PLUGIN_REPORT_READY, ready.getDeliveryId());
    } catch (AssertionError e) {
      throw new AssertionError("resent delivery not received; its state: "
          + client.getMyDelivery(ready.getDeliveryId()).raw(), e);
    }

    // rotate + activate the webhook secret: later deliveries verify with the new secret only
    String next = client.rotateMyWebhookSecret().getPendingWebhookSecret();
    assertNotNull(next);
    assertTrue(client.activateMyWebhookSecret().getActivated());
    client.updateChannelUser(uid, new UserPatch().setNickname("H"));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    WebhookEvent updated = null;
    while (updated == null && System.nanoTime() < deadline) {
      Map<String, Object> h = queue(path).poll(500, TimeUnit.MILLISECONDS);
      if (h == null) {
        continue;
      }
      byte[] body = (byte[]) h.get("body");
      WebhookEvent e = WebhookEvent.parse(body);
      if (!WebhookEvent.USER_PROFILE_UPDATED.equals(e.getType())) {
        continue; // earlier deliveries may be signed with either secret
      }
      Webhooks.verify(next, (String) h.get("timestamp"), (String) h.get("signature"), body);
      WebhookVerificationException old = assertThrows(WebhookVerificationException.class, () -> Webhooks.verify(
          secret, (String) h.get("timestamp"), (String) h.get("signature"), body));
      assertEquals(WebhookVerificationException.Reason.SIGNATURE_MISMATCH, old.getReason());
      updated = e;
    }
    assertNotNull(updated, "user.profile.updated after rotation:\n" + log());
    assertEquals(List.of("nickname"), updated.dataAs(com.healthtech.partneropen.model.UserProfileUpdatedData.class)
        .getChangedFields());
  }

  /** Webhook endpoints: an added endpoint signs with its own secret; rotate, activate, disable, delete. */
  @Test
  void webhookEndpoints() throws Exception {
    Map<String, Object> app = admin("POST", "/admin/v1/apps", adminToken, Map.of("name", "sdk-java-endpoints",
        "webhook_url", hookUrl("/hooks/endpoints-default"), "scopes", List.of("webhooks")));
    PartnerClient client = clientFor(app);
    com.healthtech.partneropen.model.WebhookEndpointList list = client.listMyWebhookEndpoints();
    assertEquals(1, list.getEndpoints().size());
    assertEquals(PartnerClient.DEFAULT_ENDPOINT_ID, list.getEndpoints().get(0).getEndpointId());
    assertEquals("app_webhook_secret", list.getEndpoints().get(0).getSigningSecret());

    String path = "/hooks/endpoints-own";
    com.healthtech.partneropen.model.NewWebhookEndpoint ep = client.createMyWebhookEndpoint(
        new com.healthtech.partneropen.model.WebhookEndpointCreate().setUrl(hookUrl(path)).setEvents(List.of("user.*")));
    assertTrue(ep.getWebhookSecret().startsWith("whsec_"));
    assertEquals("endpoint_secret", ep.getSigningSecret());
    client.sendMyWebhookEndpointTest(ep.getEndpointId());
    Map<String, Object> h = queue(path).poll(60, TimeUnit.SECONDS);
    assertNotNull(h, "webhook.test to the new endpoint:\n" + log());
    byte[] body = (byte[]) h.get("body");
    Webhooks.verify(ep.getWebhookSecret(), (String) h.get("timestamp"), (String) h.get("signature"), body);
    assertEquals(WebhookEvent.WEBHOOK_TEST, WebhookEvent.parse(body).getType());
    assertThrows(WebhookVerificationException.class, () -> Webhooks.verify((String) app.get("webhook_secret"),
        (String) h.get("timestamp"), (String) h.get("signature"), body));

    String next = client.rotateMyWebhookEndpointSecret(ep.getEndpointId()).getPendingWebhookSecret();
    assertTrue(next.startsWith("whsec_"));
    assertEquals(false, client.activateMyWebhookEndpointSecret(ep.getEndpointId()).getPendingSecret());
    client.sendMyWebhookEndpointTest(ep.getEndpointId());
    awaitHook(path, next, WebhookEvent.WEBHOOK_TEST);

    com.healthtech.partneropen.model.WebhookEndpoint off = client.updateMyWebhookEndpoint(ep.getEndpointId(),
        new com.healthtech.partneropen.model.WebhookEndpointUpdate().setEnabled(false));
    assertEquals(false, off.getEnabled());
    client.deleteMyWebhookEndpoint(ep.getEndpointId());
    PartnerApiException gone = assertThrows(PartnerApiException.class,
        () -> client.getMyWebhookEndpoint(ep.getEndpointId()));
    assertEquals(404, gone.getStatus());
    assertEquals("WEBHOOK_ENDPOINT_NOT_FOUND", gone.getCode());
  }

  /** Duplicate and concurrent writes: one user per channel_user_id, one order per idempotency key. */
  @Test
  void concurrentDuplicatesCreateOnce() throws Exception {
    Map<String, Object> app = admin("POST", "/admin/v1/apps", adminToken, Map.of("name", "sdk-java-conc"));
    admin("POST", "/admin/v1/goods", adminToken, Map.of("goods_code", "C-1", "goods_name", "Cuff"));
    PartnerClient client = clientFor(app);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<java.util.concurrent.Future<RegisterResult>> regs = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        regs.add(pool.submit(() -> client.registerChannelUser(new RegisterRequest().setChannelUserId("cu-dup")
            .setUser(new UserProfile().setName("Dup")))));
      }
      java.util.Set<Long> ids = new java.util.HashSet<>();
      int created = 0;
      for (java.util.concurrent.Future<RegisterResult> f : regs) {
        RegisterResult rr = f.get(60, TimeUnit.SECONDS);
        ids.add(rr.getOpenUserId());
        created += rr.getCreated() ? 1 : 0;
      }
      assertEquals(1, ids.size(), "one user for one channel_user_id");
      assertEquals(1, created, "exactly one registration reports created");

      OrderCreateRequest order = new OrderCreateRequest().setThirdOrderId("T-dup").setContactPerson("A")
          .setContactPhone("13912345678").setAddress("Road 2")
          .setItems(List.of(new OrderItemInput().setGoodsCode("C-1").setQuantity(1L).setUnitPrice(100L)));
      List<java.util.concurrent.Future<OrderCreateResult>> orders = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        orders.add(pool.submit(() -> client.createOrder(order, RequestOptions.idempotencyKey("order-key-1"))));
      }
      java.util.Set<String> codes = new java.util.HashSet<>();
      for (java.util.concurrent.Future<OrderCreateResult> f : orders) {
        codes.add(f.get(60, TimeUnit.SECONDS).getOrderCode());
      }
      assertEquals(1, codes.size(), "one order for one idempotency key, retried or concurrent");
    } finally {
      pool.shutdownNow();
    }
  }

  /** A channel partner issues its own cards in a batch, retried safely under one idempotency key. */
  @Test
  void channelPartnerIssuesCardsInABatch() throws Exception {
    Map<String, Object> app = admin("POST", "/admin/v1/apps", adminToken, Map.of("name", "sdk-java-issuer",
        "scopes", List.of("benefits")));
    PartnerClient client = clientFor(app);
    com.healthtech.partneropen.model.BatchIssueRequest batch = new com.healthtech.partneropen.model.BatchIssueRequest()
        .setCards(List.of(new com.healthtech.partneropen.model.CardInput().setHolderName("Wang")
            .setExpiresAt("2099-01-01T00:00:00").setItems(List.of(new com.healthtech.partneropen.model.CardItemInput()
                .setBenefitItemId(1L).setQuantity(2L)))));
    PartnerApiException notYet = assertThrows(PartnerApiException.class, () -> client.batchIssueBenefitCards(batch));
    assertEquals(403, notYet.getStatus());
    assertEquals("SERVICE_PROVIDER_UNAUTHORIZED", notYet.getCode());
    ProviderRegistered prov = client.registerOwnServiceProvider(new ProviderRegistration().setName("Insurer")
        .setType("CHANNEL_PARTNER").setContact("hr@example.com"));
    admin("POST", "/admin/v1/service-providers/" + prov.getProviderId() + "/review", adminToken,
        Map.of("decision", "approve"));
    long item = (Long) admin("POST", "/admin/v1/benefit-items", adminToken, Map.of("name", "Dental"))
        .get("benefit_item_id");
    batch.getCards().get(0).getItems().get(0).setBenefitItemId(item);
    RequestOptions key = RequestOptions.idempotencyKey("batch-1");
    com.healthtech.partneropen.model.IssuedCards first = client.batchIssueBenefitCards(batch, key);
    com.healthtech.partneropen.model.IssuedCards replay = client.batchIssueBenefitCards(batch, key);
    String number = first.getCards().get(0).getCardNumber();
    assertEquals(15, number.length());
    assertEquals(number, replay.getCards().get(0).getCardNumber(), "same key: the first answer, no second card");
    assertEquals(2L, client.getBenefitCard(number).getItems().get(0).getRemainingQuantity());
  }
}
