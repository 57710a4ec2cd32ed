package com.healthtech.partneropen.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.healthtech.partneropen.PartnerApiException;
import com.healthtech.partneropen.model.Delivery;
import com.healthtech.partneropen.model.FamilyGroupInput;
import com.healthtech.partneropen.model.RegisterRequest;
import com.healthtech.partneropen.model.UserProfile;
import com.healthtech.partneropen.model.UserPatch;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Client behaviour a partner observes, against a scripted loopback server: signing, the error type, retries only
 * where safe (with the server's Retry-After honoured), pagination and concurrent use.
 */
class PartnerClientTest {
  static final String APP_ID = "10001";
  static final String KEY = "ak_test";
  static final String SECRET = "as_test";

  /** One scripted answer. */
  record Answer(int status, String body, Map<String, String> headers) {}

  /** One request as the server saw it. */
  record Seen(String method, String uri, Map<String, List<String>> headers, byte[] body) {
    String header(String k) {
      for (Map.Entry<String, List<String>> e : headers.entrySet()) {
        if (e.getKey() != null && e.getKey().equalsIgnoreCase(k)) {
          return e.getValue().get(0);
        }
      }
      return null;
    }
  }

  HttpServer server;
  final ConcurrentLinkedQueue<Answer> script = new ConcurrentLinkedQueue<>();
  final List<Seen> seen = Collections.synchronizedList(new ArrayList<>());
  final List<Long> sleeps = Collections.synchronizedList(new ArrayList<>());
  volatile Answer fallback;
  PartnerClient client;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", this::handle);
    server.setExecutor(Executors.newFixedThreadPool(8));
    server.start();
    client = PartnerClient.builder("http://127.0.0.1:" + server.getAddress().getPort())
        .appId(APP_ID).appKey(KEY).appSecret(SECRET)
        .retryPolicy(new RetryPolicy(3, 100, 5_000, sleeps::add))
        .build();
  }

  @AfterEach
  void stop() {
    server.stop(0);
    ((ExecutorService) server.getExecutor()).shutdownNow();
  }

  void handle(HttpExchange ex) throws IOException {
    byte[] body = ex.getRequestBody().readAllBytes();
    seen.add(new Seen(ex.getRequestMethod(), ex.getRequestURI().toString(), ex.getRequestHeaders(), body));
    Answer a = script.poll();
    if (a == null) {
      a = fallback;
    }
    ex.getResponseHeaders().set("Content-Type", "application/json");
    ex.getResponseHeaders().set("X-Request-Id", "req-" + seen.size());
    a.headers().forEach((k, v) -> ex.getResponseHeaders().set(k, v));
    byte[] out = a.body().getBytes(StandardCharsets.UTF_8);
    ex.sendResponseHeaders(a.status(), out.length == 0 ? -1 : out.length);
    ex.getResponseBody().write(out);
    ex.close();
  }

  static Answer ok(String data) {
    return new Answer(200, "{\"success\":true,\"code\":0,\"message\":\"ok\"" + (data == null ? "" : ",\"data\":" + data)
        + ",\"timestamp\":\"2026-11-23T10:00:00+08:00\"}", Map.of());
  }

  static Answer err(int status, String code, Map<String, String> headers) {
    return new Answer(status, "{\"success\":false,\"code\":\"" + code + "\",\"message\":\"m\","
        + "\"timestamp\":\"2026-11-23T10:00:00+08:00\"}", headers);
  }

  static final String REGISTERED = "{\"open_user_id\":7,\"channel_user_id\":\"u\",\"created\":true,"
      + "\"family_groups\":[],\"family_members\":[]}";

  PartnerClient.Builder builder() {
    return PartnerClient.builder("http://127.0.0.1:" + server.getAddress().getPort())
        .appId(APP_ID).appKey(KEY).appSecret(SECRET)
        .retryPolicy(new RetryPolicy(3, 100, 5_000, sleeps::add));
  }

  static String signH(Seen s) {
    return Signatures.signH(s.method(), s.uri(), Long.parseLong(s.header("X-Timestamp")), s.header("X-Nonce"),
        s.body(), SECRET);
  }

  @Test
  void signsSchemeHByDefaultOnEveryRouteAndSendsCallsOfOneSecondInIt() {
    fallback = ok(REGISTERED);
    long pinned = 1_763_870_400_900L;
    PartnerClient c = builder().clock(() -> pinned).build();
    assertEquals(PartnerClient.Scheme.H, c.getScheme());
    c.registerChannelUser(new RegisterRequest().setChannelUserId("u").setUser(new UserProfile().setName("张三")));
    c.getChannelUserSnapshot(7);
    c.deleteFamilyMember(7, 70);
    c.deleteFamilyMember(7, 71);
    assertEquals(List.of(), sleeps);
    assertEquals(List.of("/open/v1/channel/users", "/open/v1/channel/users/7",
        "/open/v1/channel/users/7/family-members/70", "/open/v1/channel/users/7/family-members/71"),
        seen.stream().map(Seen::uri).toList());
    for (Seen s : seen) {
      assertEquals(null, s.header("X-App-Id"));
      assertEquals(KEY, s.header("X-App-Key"));
      assertEquals("1763870400", s.header("X-Timestamp"));
      assertTrue(s.header("X-Signature").matches("[0-9a-f]{64}"));
      assertEquals(signH(s), s.header("X-Signature"));
    }
    assertEquals(4, seen.stream().map(s -> s.header("X-Nonce")).distinct().count(), "a fresh nonce per request");
    assertEquals(4, seen.stream().map(s -> s.header("X-Signature")).distinct().count());
  }

  @Test
  void schemeMByOptionSignsCallsOfOneSecondInThatSecondAndKeepsSchemeHOnTheReportPull() {
    fallback = ok("{\"id\":5,\"user\":{\"open_user_id\":7},\"family_groups\":[],\"family_members\":[]}");
    PartnerClient c = builder().scheme(PartnerClient.Scheme.M).clock(() -> 1_763_870_403_000L).build();
    c.getChannelUserSnapshot(7);
    c.deleteFamilyMember(7, 70);
    c.dissolveFamilyGroup(7, 9);
    c.pullHealthReport(5);
    assertEquals(List.of(), sleeps);
    for (Seen s : seen.subList(0, 3)) {
      assertEquals(APP_ID, s.header("X-App-Id"));
      assertEquals(null, s.header("X-Nonce"));
      assertEquals("1763870403", s.header("X-Timestamp"));
      assertEquals(Signatures.signM(KEY, 1763870403L, SECRET, new byte[0]), s.header("X-Signature"));
    }
    Seen pull = seen.get(3);
    assertEquals(null, pull.header("X-App-Id"));
    assertEquals(signH(pull), pull.header("X-Signature"));
    assertThrows(IllegalArgumentException.class, () -> builder().scheme(null));
  }

  @Test
  void aRefused401IsNotSignedAgain() {
    fallback = err(401, "HTTP_401", Map.of());
    for (PartnerClient.Scheme sc : PartnerClient.Scheme.values()) {
      PartnerClient c = builder().scheme(sc).build();
      assertEquals(401, assertThrows(PartnerApiException.class, () -> c.deleteFamilyMember(7, 70)).getStatus());
      assertEquals(401, assertThrows(PartnerApiException.class, () -> c.getOrderDetail("x")).getStatus());
    }
    assertEquals(4, seen.size());
    assertEquals(List.of(), sleeps);
  }

  @Test
  void signsSchemeMOverTheExactBodyBytes() {
    script.add(ok(REGISTERED));
    PartnerClient client = builder().scheme(PartnerClient.Scheme.M).build();
    client.registerChannelUser(new RegisterRequest().setChannelUserId("u").setUser(new UserProfile().setName("张三")));
    Seen s = seen.get(0);
    assertEquals("POST", s.method());
    assertEquals("/open/v1/channel/users", s.uri());
    assertEquals(APP_ID, s.header("X-App-Id"));
    long ts = Long.parseLong(s.header("X-Timestamp"));
    assertEquals(Signatures.signM(KEY, ts, SECRET, s.body()), s.header("X-Signature"));
    assertEquals("{\"channel_user_id\":\"u\",\"user\":{\"name\":\"张三\"}}", new String(s.body(), StandardCharsets.UTF_8));
    assertNotNull(s.header("Idempotency-Key"), "writes carry an idempotency key so they are safe to retry");
  }

  @Test
  void signsSchemeHOverPathAndQuery() {
    script.add(ok("{\"id\":5}"));
    client.pullHealthReport(5);
    Seen s = seen.get(0);
    long ts = Long.parseLong(s.header("X-Timestamp"));
    assertEquals(KEY, s.header("X-App-Key"));
    assertEquals(Signatures.signH("GET", "/open/v1/health-reports/5", ts, s.header("X-Nonce"), new byte[0], SECRET),
        s.header("X-Signature"));
  }

  @Test
  void sendsPatchWithOnlyTheSetMembers() {
    script.add(ok(null));
    client.updateChannelUser(7, new UserPatch().setNickname(null));
    assertEquals("PATCH", seen.get(0).method());
    assertEquals("{\"nickname\":null}", new String(seen.get(0).body(), StandardCharsets.UTF_8));
  }

  @Test
  void surfacesTheTypedError() {
    script.add(new Answer(422, "{\"success\":false,\"code\":\"VALIDATION_ERROR\",\"message\":\"invalid\","
        + "\"errors\":{\"user.phone\":[\"must be 11 digits\"]},\"timestamp\":\"t\"}", Map.of()));
    PartnerApiException e = assertThrows(PartnerApiException.class,
        () -> client.upsertFamilyGroup(7, new FamilyGroupInput().setAppGroupId(1L).setName("x")));
    assertEquals(422, e.getStatus());
    assertEquals("VALIDATION_ERROR", e.getCode());
    assertEquals("invalid", e.getErrorMessage());
    assertEquals(List.of("must be 11 digits"), e.getFieldErrors().get("user.phone"));
    assertEquals("req-1", e.getRequestId());
    assertEquals(1, seen.size(), "a 422 is never retried");
  }

  @Test
  void codelessErrorsOfTheReportPullStillCarryStatusAndRequestId() {
    script.add(new Answer(404, "{\"success\":false,\"message\":\"not found\",\"timestamp\":\"t\"}", Map.of()));
    PartnerApiException e = assertThrows(PartnerApiException.class, () -> client.pullHealthReport(9));
    assertEquals(404, e.getStatus());
    assertEquals(null, e.getCode());
    assertEquals("req-1", e.getRequestId());
  }

  @Test
  void retriesReadsOn503HonouringRetryAfter() {
    script.add(err(503, "HTTP_503", Map.of("Retry-After", "2")));
    script.add(ok("{\"user\":{\"open_user_id\":7},\"family_groups\":[],\"family_members\":[]}"));
    assertEquals(7L, client.getChannelUserSnapshot(7).getUser().getOpenUserId());
    assertEquals(2, seen.size());
    assertEquals(List.of(2000L), sleeps);
  }

  @Test
  void retriesWritesOn429WithTheSameIdempotencyKey() {
    script.add(err(429, "HTTP_429", Map.of("Retry-After", "1")));
    script.add(ok(REGISTERED));
    client.registerChannelUser(new RegisterRequest().setChannelUserId("u").setUser(new UserProfile().setName("a")),
        RequestOptions.idempotencyKey("key-1"));
    assertEquals(2, seen.size());
    assertEquals("key-1", seen.get(0).header("Idempotency-Key"));
    assertEquals("key-1", seen.get(1).header("Idempotency-Key"));
    assertEquals(List.of(1000L), sleeps);
    assertTrue(!seen.get(0).header("X-Nonce").equals(seen.get(1).header("X-Nonce")), "each attempt signed anew");
    assertEquals(signH(seen.get(1)), seen.get(1).header("X-Signature"));
  }

  @Test
  void aGeneratedKeyIsKeptAcrossTheRetriesOfOneCall() {
    script.add(err(503, "HTTP_503", Map.of()));
    script.add(err(429, "HTTP_429", Map.of("Retry-After", "1")));
    script.add(ok(null));
    script.add(ok(null));
    client.deleteFamilyMember(7, 70);
    client.deleteFamilyMember(7, 71);
    assertEquals(4, seen.size());
    String k = seen.get(0).header("Idempotency-Key");
    assertEquals(k, java.util.UUID.fromString(k).toString());
    assertEquals(k, seen.get(1).header("Idempotency-Key"));
    assertEquals(k, seen.get(2).header("Idempotency-Key"));
    assertTrue(!k.equals(seen.get(3).header("Idempotency-Key")));
    assertEquals(4, seen.stream().map(s -> s.header("X-Nonce")).distinct().count());
  }

  @Test
  void neverRetriesAWriteWithoutAnIdempotencyKey() {
    PartnerClient noKeys = PartnerClient.builder("http://127.0.0.1:" + server.getAddress().getPort())
        .appId(APP_ID).appKey(KEY).appSecret(SECRET).autoIdempotencyKeys(false)
        .retryPolicy(new RetryPolicy(3, 100, 5_000, sleeps::add)).build();
    script.add(err(429, "HTTP_429", Map.of("Retry-After", "1")));
    PartnerApiException e = assertThrows(PartnerApiException.class,
        () -> noKeys.registerChannelUser(new RegisterRequest().setChannelUserId("u")));
    assertEquals(429, e.getStatus());
    assertEquals(1L, e.getRetryAfterSeconds());
    assertEquals(1, seen.size());
    assertEquals(List.of(), sleeps);
    assertEquals(null, seen.get(0).header("Idempotency-Key"));
  }

  @Test
  void givesUpAfterTheLastAttemptAndBacksOffWithoutRetryAfter() {
    fallback = err(503, "HTTP_503", Map.of());
    PartnerApiException e = assertThrows(PartnerApiException.class, () -> client.getOrderDetail("O-1"));
    assertEquals(503, e.getStatus());
    assertEquals(3, seen.size());
    assertEquals(2, sleeps.size());
    assertTrue(sleeps.get(0) >= 50 && sleeps.get(0) <= 100, "first backoff within [base/2, base]: " + sleeps);
    assertTrue(sleeps.get(1) >= 100 && sleeps.get(1) <= 200, "second backoff doubled: " + sleeps);
    assertEquals("/open/v1/order/detail?order_code=O-1", seen.get(0).uri());
  }

  @Test
  void paginatesTheDeliveryLogFollowingNextCursor() {
    script.add(ok("{\"deliveries\":[{\"delivery_id\":\"a\"},{\"delivery_id\":\"b\"}],\"next_cursor\":\"1-2\"}"));
    script.add(ok("{\"deliveries\":[{\"delivery_id\":\"c\"}],\"next_cursor\":null}"));
    List<String> ids = new ArrayList<>();
    for (Delivery d : client.iterateMyDeliveries(null)) {
      ids.add(d.getDeliveryId());
    }
    assertEquals(List.of("a", "b", "c"), ids);
    assertEquals("/open/v1/webhooks/deliveries", seen.get(0).uri());
    assertEquals("/open/v1/webhooks/deliveries?after=1-2", seen.get(1).uri());
  }

  @Test
  void isSafeForConcurrentUseAndKeysEachWriteDistinctly() throws Exception {
    fallback = ok(REGISTERED);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    AtomicInteger done = new AtomicInteger();
    List<Future<?>> fs = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      final int n = i;
      fs.add(pool.submit(() -> {
        client.registerChannelUser(new RegisterRequest().setChannelUserId("u" + n).setUser(new UserProfile().setName("n")));
        done.incrementAndGet();
      }));
    }
    for (Future<?> f : fs) {
      f.get(30, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertEquals(40, done.get());
    assertEquals(40, seen.stream().map(s -> s.header("Idempotency-Key")).distinct().count());
    assertEquals(40, seen.stream().map(s -> s.header("X-Nonce")).distinct().count());
    for (Seen s : seen) {
      assertEquals(signH(s), s.header("X-Signature"));
    }
  }

  @Test
  void fetchesAndCachesTheOAuthTokenForTheDailyReport() {
    script.add(new Answer(200, "{\"access_token\":\"at_1\",\"token_type\":\"Bearer\",\"expires_in\":7200,"
        + "\"scope\":\"daily_report\"}", Map.of()));
    script.add(ok("{\"date\":\"2026-11-23\",\"heartRate\":{\"avg\":70,\"unit\":\"bpm\"},\"spo2\":null,"
        + "\"aiInsight\":\"ok\"}"));
    script.add(ok("{\"date\":\"2026-11-22\",\"heartRate\":null,\"spo2\":null,\"aiInsight\":\"\"}"));
    assertEquals(70.0, client.getDailyReport(7L, null, null).getHeartRate().getAvg());
    client.getDailyReport(7L, null, "2026-11-22");
    assertEquals(3, seen.size(), "one token request, two reads");
    assertEquals("/oauth/token", seen.get(0).uri());
    assertTrue(seen.get(0).header("Authorization").startsWith("Basic "));
    assertEquals("grant_type=client_credentials&scope=daily_report",
        new String(seen.get(0).body(), StandardCharsets.UTF_8));
    assertEquals("Bearer at_1", seen.get(1).header("Authorization"));
    assertEquals("Bearer at_1", seen.get(2).header("Authorization"));
    assertEquals(KEY, seen.get(2).header("X-App-Key"));
    assertEquals("/v1/health/daily-report?open_user_id=7&date=2026-11-22", seen.get(2).uri());
  }

  /**
   * Bodyless requests share a scheme M signature within a second, and the platform binds a signature to its first
   * write route: the client must never present one signature on two different write routes, or a read's on a write.
   */
  @Test
  void keepsTheErrorBodyOfA401ToAWrite() {
    script.add(new Answer(401, "{\"success\":false,\"code\":\"HTTP_401\",\"message\":\"unauthorized\","
        + "\"timestamp\":\"t\"}", Map.of("WWW-Authenticate", "Signature")));
    PartnerApiException e = assertThrows(PartnerApiException.class, () -> client.rotateMyWebhookSecret());
    assertEquals(401, e.getStatus());
    assertEquals("HTTP_401", e.getCode());
    assertEquals("req-1", e.getRequestId());
  }

  @Test
  void paginatesFulfillmentsByTheLastRecordIdUntilAShortPage() {
    StringBuilder full = new StringBuilder("{\"fulfillments\":[");
    for (int i = 1; i <= 100; i++) {
      full.append(i > 1 ? "," : "").append("{\"fulfillment_record_id\":").append(i).append('}');
    }
    script.add(ok(full.append("]}").toString()));
    script.add(ok("{\"fulfillments\":[{\"fulfillment_record_id\":101}]}"));
    long n = 0;
    long last = 0;
    for (com.healthtech.partneropen.model.Fulfillment f : client.iterateFulfillments("issuer")) {
      n++;
      last = f.getFulfillmentRecordId();
    }
    assertEquals(101, n);
    assertEquals(101, last);
    assertEquals(2, seen.size());
    assertEquals("/open/v1/benefit-cards/fulfillments?role=issuer&limit=100", seen.get(0).uri());
    assertEquals("/open/v1/benefit-cards/fulfillments?role=issuer&after=100&limit=100", seen.get(1).uri());
  }
}
