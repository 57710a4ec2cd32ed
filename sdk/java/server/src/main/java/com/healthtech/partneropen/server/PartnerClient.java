package com.healthtech.partneropen.server;

import com.healthtech.partneropen.PartnerApiException;
import com.healthtech.partneropen.json.Json;
import com.healthtech.partneropen.json.JsonException;
import com.healthtech.partneropen.json.JsonValues;
import com.healthtech.partneropen.model.AccessLogPage;
import com.healthtech.partneropen.model.BatchIssueRequest;
import com.healthtech.partneropen.model.Card;
import com.healthtech.partneropen.model.DailyReport;
import com.healthtech.partneropen.model.Delivery;
import com.healthtech.partneropen.model.DeliveryDetail;
import com.healthtech.partneropen.model.DeliveryPage;
import com.healthtech.partneropen.model.ErasureAcknowledgement;
import com.healthtech.partneropen.model.FamilyGroupInput;
import com.healthtech.partneropen.model.FamilyGroupUpsertResult;
import com.healthtech.partneropen.model.FamilyMemberUpsertInput;
import com.healthtech.partneropen.model.FamilyMemberUpsertResult;
import com.healthtech.partneropen.model.FeedEvent;
import com.healthtech.partneropen.model.FeedPage;
import com.healthtech.partneropen.model.Fulfillment;
import com.healthtech.partneropen.model.FulfillmentList;
import com.healthtech.partneropen.model.HealthReport;
import com.healthtech.partneropen.model.IssuedCards;
import com.healthtech.partneropen.model.Measurement;
import com.healthtech.partneropen.model.MockMeasureRequest;
import com.healthtech.partneropen.model.Order;
import com.healthtech.partneropen.model.OrderCreateRequest;
import com.healthtech.partneropen.model.OrderCreateResult;
import com.healthtech.partneropen.model.PendingWebhookSecret;
import com.healthtech.partneropen.model.ProviderRegistered;
import com.healthtech.partneropen.model.ProviderRegistration;
import com.healthtech.partneropen.model.RatingRequest;
import com.healthtech.partneropen.model.RatingResult;
import com.healthtech.partneropen.model.RegisterRequest;
import com.healthtech.partneropen.model.RegisterResult;
import com.healthtech.partneropen.model.ResendResult;
import com.healthtech.partneropen.model.SandboxEventRequest;
import com.healthtech.partneropen.model.SandboxEventTriggered;
import com.healthtech.partneropen.model.SandboxShipmentRequest;
import com.healthtech.partneropen.model.ShipmentResult;
import com.healthtech.partneropen.model.Snapshot;
import com.healthtech.partneropen.model.TokenResponse;
import com.healthtech.partneropen.model.UserPatch;
import com.healthtech.partneropen.model.NewWebhookEndpoint;
import com.healthtech.partneropen.model.RotatedWebhookEndpoint;
import com.healthtech.partneropen.model.WebhookEndpoint;
import com.healthtech.partneropen.model.WebhookEndpointCreate;
import com.healthtech.partneropen.model.WebhookEndpointList;
import com.healthtech.partneropen.model.WebhookEndpointUpdate;
import com.healthtech.partneropen.model.WebhookTestQueued;
import com.healthtech.partneropen.model.VerifyUseRequest;
import com.healthtech.partneropen.model.VerifyUseResult;
import com.healthtech.partneropen.model.WebhookReplay;
import com.healthtech.partneropen.model.WebhookReplayRequest;
import com.healthtech.partneropen.model.WebhookSecretActivated;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.UnsupportedEncodingException;
import java.net.URL;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.UUID;

/**
 * The partner's server-side client for every partner route of the platform. Method names are the OpenAPI
 * operationIds (a test holds them to internal/openapi/openapi.yaml). It signs with scheme H by default (every
 * partner route; {@link Builder#scheme} chooses scheme M for the routes that take it: channel users, orders,
 * benefit cards, delivery log and feed), scheme H always on the report pull and sandbox mock, or the OAuth bearer token
 * (daily report, fetched and cached here), turns every non-2xx into a {@link PartnerApiException}, and retries 429
 * and 503 only when safe: reads always, writes because it sends an Idempotency-Key with each (generated per call
 * unless given in {@link RequestOptions}). Thread-safe; share one instance. Never ship it in an app: it holds the
 * app secret.
 */
public final class PartnerClient {
  private final String baseUrl;
  private final String appId;
  private final String appKey;
  private final String appSecret;
  private final RetryPolicy retry;
  private final int connectTimeoutMillis;
  private final int readTimeoutMillis;
  private final boolean autoIdempotencyKeys;
  private final String userAgent;
  private final SecureRandom random = new SecureRandom();
  private final Object tokenLock = new Object();
  private final Scheme scheme;
  private final LongSupplier clockMillis;
  private String accessToken;
  private long accessTokenExpiresAtMillis;

  private PartnerClient(Builder b) {
    this.baseUrl = b.baseUrl.endsWith("/") ? b.baseUrl.substring(0, b.baseUrl.length() - 1) : b.baseUrl;
    this.appId = b.appId;
    this.appKey = b.appKey;
    this.appSecret = b.appSecret;
    this.retry = b.retry;
    this.connectTimeoutMillis = b.connectTimeoutMillis;
    this.readTimeoutMillis = b.readTimeoutMillis;
    this.autoIdempotencyKeys = b.autoIdempotencyKeys;
    this.userAgent = b.userAgent;
    this.scheme = b.scheme;
    this.clockMillis = b.clockMillis;
  }

  /** How the routes that accept either signature scheme are signed. */
  public enum Scheme {
    /**
     * HMAC-SHA-256 over method, path with query, timestamp, a fresh single-use nonce and the body's SHA-256
     * (X-App-Key, X-Timestamp, X-Nonce, X-Signature): no two requests share a signature. The default.
     */
    H,
    /** The spec's MD5 of app key, timestamp, app secret and body (X-App-Id, X-Timestamp, X-Signature). */
    M
  }

  /** The scheme this client signs the routes that accept either with. */
  public Scheme getScheme() {
    return scheme;
  }

  /** Starts configuring a client for the platform at {@code baseUrl} (the sandbox or production base address). */
  public static Builder builder(String baseUrl) {
    return new Builder(baseUrl);
  }

  /** Configures a {@link PartnerClient}; app id, app key and app secret are required. */
  public static final class Builder {
    private final String baseUrl;
    private String appId;
    private String appKey;
    private String appSecret;
    private RetryPolicy retry = RetryPolicy.defaults();
    private int connectTimeoutMillis = 10_000;
    private int readTimeoutMillis = 30_000;
    private boolean autoIdempotencyKeys = true;
    private String userAgent = "partner-open-platform-java/0.1";
    private Scheme scheme = Scheme.H;
    private LongSupplier clockMillis = System::currentTimeMillis;

    private Builder(String baseUrl) {
      if (baseUrl == null || !(baseUrl.startsWith("http://") || baseUrl.startsWith("https://"))) {
        throw new IllegalArgumentException("baseUrl must be an http(s) URL");
      }
      this.baseUrl = baseUrl;
    }

    /** The numeric app id (X-App-Id of scheme M). */
    public Builder appId(String appId) {
      this.appId = appId;
      return this;
    }

    /** The app key (scheme M signature input, X-App-Key of scheme H, OAuth client id). */
    public Builder appKey(String appKey) {
      this.appKey = appKey;
      return this;
    }

    /** The app secret: signs every request; keep it on the server. */
    public Builder appSecret(String appSecret) {
      this.appSecret = appSecret;
      return this;
    }

    /** Retry behaviour on 429/503; {@link RetryPolicy#none()} disables it. */
    public Builder retryPolicy(RetryPolicy retry) {
      this.retry = retry;
      return this;
    }

    /** Connect and read timeouts. */
    public Builder timeouts(int connectMillis, int readMillis) {
      this.connectTimeoutMillis = connectMillis;
      this.readTimeoutMillis = readMillis;
      return this;
    }

    /** Whether writes without an explicit key get a random Idempotency-Key (default true), making them retryable. */
    public Builder autoIdempotencyKeys(boolean on) {
      this.autoIdempotencyKeys = on;
      return this;
    }

    /**
     * The signature scheme of the routes that accept either (default {@link Scheme#H}); the report pull and the
     * sandbox mock always use scheme H.
     */
    public Builder scheme(Scheme scheme) {
      if (scheme == null) {
        throw new IllegalArgumentException("scheme must not be null");
      }
      this.scheme = scheme;
      return this;
    }

    /** The clock requests are signed with (tests pin it to sign several requests in one second). */
    Builder clock(LongSupplier millis) {
      this.clockMillis = millis;
      return this;
    }

    /** The User-Agent sent with each request. */
    public Builder userAgent(String userAgent) {
      this.userAgent = userAgent;
      return this;
    }

    /** Builds the client. */
    public PartnerClient build() {
      if (appId == null || appId.isEmpty() || appKey == null || appKey.isEmpty() || appSecret == null
          || appSecret.isEmpty()) {
        throw new IllegalArgumentException("appId, appKey and appSecret are required");
      }
      return new PartnerClient(this);
    }
  }

  // ---- channel users (scheme M) ----

  /** One-step register and bind (user, groups, members); idempotent on channel_user_id (created=false on repeat). */
  public RegisterResult registerChannelUser(RegisterRequest request) {
    return registerChannelUser(request, null);
  }

  /** {@link #registerChannelUser(RegisterRequest)} with per-call options. */
  public RegisterResult registerChannelUser(RegisterRequest request, RequestOptions options) {
    return RegisterResult.fromJson(call("POST", "/open/v1/channel/users", request, Auth.M, options));
  }

  /** The user's full snapshot (user, valid groups, valid members). */
  public Snapshot getChannelUserSnapshot(long openUserId) {
    return getChannelUserSnapshot(openUserId, null, null);
  }

  /**
   * The snapshot; {@code updatedAfter} (ISO 8601) limits family_members to those changed after it, and
   * {@code channelUserId} is the fallback lookup when the open_user_id is not stored (either may be null).
   */
  public Snapshot getChannelUserSnapshot(long openUserId, String updatedAfter, String channelUserId) {
    Map<String, Object> q = new LinkedHashMap<String, Object>();
    q.put("updated_after", updatedAfter);
    q.put("channel_user_id", channelUserId);
    return Snapshot.fromJson(call("GET", "/open/v1/channel/users/" + openUserId + query(q), null, Auth.M, null));
  }

  /** Updates basic user info; only the members set on the patch change (set nickname to null to clear it). */
  public void updateChannelUser(long openUserId, UserPatch patch) {
    updateChannelUser(openUserId, patch, null);
  }

  /** {@link #updateChannelUser(long, UserPatch)} with per-call options. */
  public void updateChannelUser(long openUserId, UserPatch patch, RequestOptions options) {
    call("PATCH", "/open/v1/channel/users/" + openUserId, patch, Auth.M, options);
  }

  /** Creates or renames a family group keyed by app_group_id. */
  public FamilyGroupUpsertResult upsertFamilyGroup(long openUserId, FamilyGroupInput group) {
    return upsertFamilyGroup(openUserId, group, null);
  }

  /** {@link #upsertFamilyGroup(long, FamilyGroupInput)} with per-call options. */
  public FamilyGroupUpsertResult upsertFamilyGroup(long openUserId, FamilyGroupInput group, RequestOptions options) {
    return FamilyGroupUpsertResult.fromJson(
        call("POST", "/open/v1/channel/users/" + openUserId + "/family-groups", group, Auth.M, options));
  }

  /** Dissolves a family group (irreversible; its members are soft-deleted). */
  public void dissolveFamilyGroup(long openUserId, long familyGroupId) {
    dissolveFamilyGroup(openUserId, familyGroupId, null);
  }

  /** {@link #dissolveFamilyGroup(long, long)} with per-call options. */
  public void dissolveFamilyGroup(long openUserId, long familyGroupId, RequestOptions options) {
    call("DELETE", "/open/v1/channel/users/" + openUserId + "/family-groups/" + familyGroupId, null, Auth.M,
        options);
  }

  /** Creates or updates a family member keyed by app_user_id. */
  public FamilyMemberUpsertResult upsertFamilyMember(long openUserId, FamilyMemberUpsertInput member) {
    return upsertFamilyMember(openUserId, member, null);
  }

  /** {@link #upsertFamilyMember(long, FamilyMemberUpsertInput)} with per-call options. */
  public FamilyMemberUpsertResult upsertFamilyMember(long openUserId, FamilyMemberUpsertInput member,
      RequestOptions options) {
    return FamilyMemberUpsertResult.fromJson(
        call("POST", "/open/v1/channel/users/" + openUserId + "/family-members", member, Auth.M, options));
  }

  /** Soft-deletes a family member. */
  public void deleteFamilyMember(long openUserId, long memberId) {
    deleteFamilyMember(openUserId, memberId, null);
  }

  /** {@link #deleteFamilyMember(long, long)} with per-call options. */
  public void deleteFamilyMember(long openUserId, long memberId, RequestOptions options) {
    call("DELETE", "/open/v1/channel/users/" + openUserId + "/family-members/" + memberId, null, Auth.M, options);
  }

  // ---- orders (scheme M) ----

  /** Submits a purchase order (starts PENDING_REVIEW). */
  public OrderCreateResult createOrder(OrderCreateRequest order) {
    return createOrder(order, null);
  }

  /** {@link #createOrder(OrderCreateRequest)} with per-call options. */
  public OrderCreateResult createOrder(OrderCreateRequest order, RequestOptions options) {
    return OrderCreateResult.fromJson(call("POST", "/open/v1/order/create", order, Auth.M, options));
  }

  /** Reads an order with its items by order_code. */
  public Order getOrderDetail(String orderCode) {
    Map<String, Object> q = new LinkedHashMap<String, Object>();
    q.put("order_code", orderCode);
    return Order.fromJson(call("GET", "/open/v1/order/detail" + query(q), null, Auth.M, null));
  }

  /** Sandbox only: marks one of the app's orders shipped so the order.shipped webhook can be tried. */
  public ShipmentResult sandboxShippedCallbackTest(SandboxShipmentRequest request) {
    return ShipmentResult.fromJson(
        call("POST", "/open/v1/order/shipped-callback-test", request, Auth.M, null));
  }

  /**
   * Sandbox only: causes a sample webhook event of {@code request.getEvent()}'s type; it is delivered and enters the
   * event feed like the real event.
   */
  public SandboxEventTriggered triggerSandboxEvent(SandboxEventRequest request) {
    return SandboxEventTriggered.fromJson(call("POST", "/open/v1/webhooks/sandbox-events", request, Auth.M, null));
  }

  // ---- health reports ----

  /** Pulls a health report (scheme H); the pulled snapshot is authoritative over webhook order. */
  public HealthReport pullHealthReport(long openReportId) {
    return HealthReport.fromJson(call("GET", "/open/v1/health-reports/" + openReportId, null, Auth.H, null));
  }

  /**
   * The daily report (OAuth bearer token, fetched with {@link #oauthToken()} and cached until shortly before it
   * expires); give openUserId or channelUserId, and date (Y-m-d) or null for today.
   */
  public DailyReport getDailyReport(Long openUserId, String channelUserId, String date) {
    Map<String, Object> q = new LinkedHashMap<String, Object>();
    q.put("open_user_id", openUserId);
    q.put("channel_user_id", channelUserId);
    q.put("date", date);
    String path = "/v1/health/daily-report" + query(q);
    try {
      return DailyReport.fromJson(call("GET", path, null, Auth.BEARER, null));
    } catch (PartnerApiException e) {
      if (e.getStatus() != 401) {
        throw e;
      }
      synchronized (tokenLock) {
        accessToken = null; // revoked or expired early: fetch a new token once
      }
      return DailyReport.fromJson(call("GET", path, null, Auth.BEARER, null));
    }
  }

  /** Obtains an access token (client credentials, HTTP Basic with app key and secret, scope daily_report). */
  public TokenResponse oauthToken() {
    Map<String, Object> form = new LinkedHashMap<String, Object>();
    form.put("grant_type", "client_credentials");
    form.put("scope", "daily_report");
    Response r = send("POST", "/oauth/token", formBody(form), "application/x-www-form-urlencoded", Auth.BASIC, null,
        true);
    TokenResponse t = TokenResponse.fromJson(parse(r));
    synchronized (tokenLock) {
      accessToken = t.getAccessToken();
      long ttl = t.getExpiresIn() == null ? 0 : t.getExpiresIn();
      accessTokenExpiresAtMillis = System.currentTimeMillis() + Math.max(0, ttl - 60) * 1000L;
    }
    return t;
  }

  /** Revokes an access token (RFC 7009); the cached token is dropped if it is that one. */
  public void oauthRevoke(String token) {
    Map<String, Object> form = new LinkedHashMap<String, Object>();
    form.put("token", token);
    send("POST", "/oauth/revoke", formBody(form), "application/x-www-form-urlencoded", Auth.BASIC, null, true);
    synchronized (tokenLock) {
      if (token.equals(accessToken)) {
        accessToken = null;
      }
    }
  }

  // ---- plugin sandbox (scheme H) ----

  /** Sandbox: asks the platform to send plugin.report.ready for a simulated measurement. */
  public Measurement sandboxMockMeasure(MockMeasureRequest request) {
    return sandboxMockMeasure(request, null);
  }

  /** {@link #sandboxMockMeasure(MockMeasureRequest)} with per-call options. */
  public Measurement sandboxMockMeasure(MockMeasureRequest request, RequestOptions options) {
    return Measurement.fromJson(call("POST", "/sandbox/mock/measure", request, Auth.H, options));
  }

  // ---- webhooks: delivery log, resend, secrets, feed (scheme M) ----

  /** Filters of the delivery log; every member optional. */
  public static final class DeliveryQuery {
    /** Only deliveries in this status (see DeliveryStatus). */
    public String status;
    /** Only deliveries of this exact event name. */
    public String event;
    /** Created at or after this ISO 8601 instant. */
    public String from;
    /** Created strictly before this ISO 8601 instant. */
    public String to;
    /** Page size, 1 to 1000. */
    public Integer limit;
  }

  /** One page of the app's delivery log, after {@code after} (null for the start). */
  public DeliveryPage listMyDeliveries(DeliveryQuery filter, String after) {
    DeliveryQuery f = filter == null ? new DeliveryQuery() : filter;
    Map<String, Object> q = new LinkedHashMap<String, Object>();
    q.put("status", f.status);
    q.put("event", f.event);
    q.put("from", f.from);
    q.put("to", f.to);
    q.put("after", after);
    q.put("limit", f.limit);
    return DeliveryPage.fromJson(call("GET", "/open/v1/webhooks/deliveries" + query(q), null, Auth.M, null));
  }

  /** Every delivery matching the filter, fetched page by page as the loop advances. */
  public Iterable<Delivery> iterateMyDeliveries(final DeliveryQuery filter) {
    return new Paginator<Delivery>(null, cursor -> {
      DeliveryPage p = listMyDeliveries(filter, cursor);
      return new Paginator.Page<Delivery>(p.getDeliveries(), p.getNextCursor());
    });
  }

  /** One delivery with its body and attempts. */
  public DeliveryDetail getMyDelivery(String deliveryId) {
    return DeliveryDetail.fromJson(
        call("GET", "/open/v1/webhooks/deliveries/" + pathSegment(deliveryId), null, Auth.M, null));
  }

  /** Sends a delivery again (same delivery id and body). */
  public ResendResult resendMyDelivery(String deliveryId) {
    return ResendResult.fromJson(
        call("POST", "/open/v1/webhooks/deliveries/" + pathSegment(deliveryId) + "/resend", null, Auth.M, null));
  }

  /** Acknowledges the erasure of one of the app's users (named by the user.erased webhook): the app erased its copies. Idempotent. */
  public ErasureAcknowledgement acknowledgeErasure(long openUserId) {
    return ErasureAcknowledgement.fromJson(
        call("POST", "/open/v1/erasures/" + openUserId + "/acknowledge", null, Auth.M, null));
  }

  /** One page of who accessed this app's users' data and why; every argument may be null. */
  public AccessLogPage listMyAccessLog(Long openUserId, String from, String to, Long after, Integer limit) {
    Map<String, Object> q = new LinkedHashMap<String, Object>();
    q.put("open_user_id", openUserId);
    q.put("from", from);
    q.put("to", to);
    q.put("after", after);
    q.put("limit", limit);
    return AccessLogPage.fromJson(call("GET", "/open/v1/access-log" + query(q), null, Auth.M, null));
  }

  /**
   * Asks for the app's past webhook events of the chosen types (since a time or after a feed cursor) to be delivered
   * again to one endpoint, under their original delivery ids; it runs in the background (poll getWebhookReplay).
   */
  public WebhookReplay requestWebhookReplay(WebhookReplayRequest request) {
    return requestWebhookReplay(request, null);
  }

  /** {@link #requestWebhookReplay(WebhookReplayRequest)} with per-call options. */
  public WebhookReplay requestWebhookReplay(WebhookReplayRequest request, RequestOptions options) {
    return WebhookReplay.fromJson(call("POST", "/open/v1/webhooks/replays", request, Auth.M, options));
  }

  /** A replay's status and counts. */
  public WebhookReplay getWebhookReplay(long replayId) {
    return WebhookReplay.fromJson(call("GET", "/open/v1/webhooks/replays/" + replayId, null, Auth.M, null));
  }

  /** Stops a running replay; what it already queued is still sent. */
  public WebhookReplay cancelWebhookReplay(long replayId) {
    return WebhookReplay.fromJson(call("POST", "/open/v1/webhooks/replays/" + replayId + "/cancel", null, Auth.M, null));
  }

  /** Issues a pending webhook secret (it signs nothing until activated); deploy it to receivers first. */
  public PendingWebhookSecret rotateMyWebhookSecret() {
    return PendingWebhookSecret.fromJson(call("POST", "/open/v1/webhooks/secret/rotate", null, Auth.M, null));
  }

  /** Activates the pending webhook secret: deliveries are signed with it from now on. */
  public WebhookSecretActivated activateMyWebhookSecret() {
    return WebhookSecretActivated.fromJson(call("POST", "/open/v1/webhooks/secret/activate", null, Auth.M, null));
  }

  // ---- webhook endpoints: endpoint 0 is the default one (the app's webhook_url, signed with the app's webhook
  // secret); every other endpoint signs with its own secret ----

  /** The app's default webhook endpoint id. */
  public static final long DEFAULT_ENDPOINT_ID = 0;

  /** The app's webhook endpoints, the default one first while it has a URL; no secret is listed. */
  public WebhookEndpointList listMyWebhookEndpoints() {
    return WebhookEndpointList.fromJson(call("GET", "/open/v1/webhooks/endpoints", null, Auth.M, null));
  }

  /** Adds an endpoint; the answer's webhook secret signs its deliveries and is shown this once. */
  public NewWebhookEndpoint createMyWebhookEndpoint(WebhookEndpointCreate endpoint) {
    return createMyWebhookEndpoint(endpoint, null);
  }

  /** {@link #createMyWebhookEndpoint(WebhookEndpointCreate)} with per-call options. */
  public NewWebhookEndpoint createMyWebhookEndpoint(WebhookEndpointCreate endpoint, RequestOptions options) {
    return NewWebhookEndpoint.fromJson(call("POST", "/open/v1/webhooks/endpoints", endpoint, Auth.M, options));
  }

  /** One endpoint (0: the default one). */
  public WebhookEndpoint getMyWebhookEndpoint(long endpointId) {
    return WebhookEndpoint.fromJson(call("GET", "/open/v1/webhooks/endpoints/" + endpointId, null, Auth.M, null));
  }

  /** Changes the url, events (empty or null: every event) or enabled set on {@code change}. */
  public WebhookEndpoint updateMyWebhookEndpoint(long endpointId, WebhookEndpointUpdate change) {
    return updateMyWebhookEndpoint(endpointId, change, null);
  }

  /** {@link #updateMyWebhookEndpoint(long, WebhookEndpointUpdate)} with per-call options. */
  public WebhookEndpoint updateMyWebhookEndpoint(long endpointId, WebhookEndpointUpdate change, RequestOptions options) {
    return WebhookEndpoint.fromJson(call("PATCH", "/open/v1/webhooks/endpoints/" + endpointId, change, Auth.M, options));
  }

  /** Removes an endpoint; for endpoint 0 it clears the app's webhook_url. */
  public void deleteMyWebhookEndpoint(long endpointId) {
    deleteMyWebhookEndpoint(endpointId, null);
  }

  /** {@link #deleteMyWebhookEndpoint(long)} with per-call options. */
  public void deleteMyWebhookEndpoint(long endpointId, RequestOptions options) {
    call("DELETE", "/open/v1/webhooks/endpoints/" + endpointId, null, Auth.M, options);
  }

  /** Issues a pending secret (shown once); the current secret keeps signing until it is activated. */
  public RotatedWebhookEndpoint rotateMyWebhookEndpointSecret(long endpointId) {
    return RotatedWebhookEndpoint.fromJson(
        call("POST", "/open/v1/webhooks/endpoints/" + endpointId + "/secret/rotate", null, Auth.M, null));
  }

  /** Makes the endpoint's pending secret the only one that signs. */
  public WebhookEndpoint activateMyWebhookEndpointSecret(long endpointId) {
    return WebhookEndpoint.fromJson(
        call("POST", "/open/v1/webhooks/endpoints/" + endpointId + "/secret/activate", null, Auth.M, null));
  }

  /** Queues one signed webhook.test delivery to this endpoint only. */
  public WebhookTestQueued sendMyWebhookEndpointTest(long endpointId) {
    return WebhookTestQueued.fromJson(
        call("POST", "/open/v1/webhooks/endpoints/" + endpointId + "/test", null, Auth.M, null));
  }

  /** One page of the app's event feed after {@code after} (null for the start); {@code limit} may be null. */
  public FeedPage webhookEventFeed(String after, Integer limit) {
    return webhookEventFeed(after, limit, null);
  }

  /**
   * The event feed as a long-poll: with {@code waitSeconds} (1 to 20) the platform holds the request,
   * when nothing follows {@code after}, until an event arrives or the wait ends (an empty page then).
   * The client's read timeout (30 s by default) must exceed the wait.
   */
  public FeedPage webhookEventFeed(String after, Integer limit, Integer waitSeconds) {
    Map<String, Object> q = new LinkedHashMap<String, Object>();
    q.put("after", after);
    q.put("limit", limit);
    q.put("wait", waitSeconds);
    return FeedPage.fromJson(call("GET", "/open/v1/webhooks/events" + query(q), null, Auth.M, null));
  }

  /** Every feed event after {@code after}, page by page until has_more is false. */
  public Iterable<FeedEvent> iterateWebhookEvents(String after) {
    return new Paginator<FeedEvent>(after, cursor -> {
      FeedPage p = webhookEventFeed(cursor, null);
      boolean more = Boolean.TRUE.equals(p.getHasMore());
      return new Paginator.Page<FeedEvent>(p.getEvents(), more ? p.getNextCursor() : null);
    });
  }

  // ---- benefit cards (scheme M) ----

  /** Registers the calling app as a service provider (then reviewed by the platform). */
  public ProviderRegistered registerOwnServiceProvider(ProviderRegistration registration) {
    return ProviderRegistered.fromJson(call("POST", "/open/v1/service-providers", registration, Auth.M, null));
  }

  /** Channel partners: issues a batch of benefit cards. */
  public IssuedCards batchIssueBenefitCards(BatchIssueRequest request) {
    return batchIssueBenefitCards(request, null);
  }

  /** {@link #batchIssueBenefitCards(BatchIssueRequest)} with per-call options. */
  public IssuedCards batchIssueBenefitCards(BatchIssueRequest request, RequestOptions options) {
    return IssuedCards.fromJson(call("POST", "/open/v1/benefit-cards/batch-issue", request, Auth.M, options));
  }

  /** Consumes uses of a benefit item on a card (irreversible; a retried call with the same key is not doubled). */
  public VerifyUseResult verifyBenefitUse(VerifyUseRequest request) {
    return verifyBenefitUse(request, null);
  }

  /** {@link #verifyBenefitUse(VerifyUseRequest)} with per-call options. */
  public VerifyUseResult verifyBenefitUse(VerifyUseRequest request, RequestOptions options) {
    return VerifyUseResult.fromJson(call("POST", "/open/v1/benefit-cards/verify-use", request, Auth.M, options));
  }

  /** Reads a benefit card the app issued or may verify. */
  public Card getBenefitCard(String cardNumber) {
    Map<String, Object> q = new LinkedHashMap<String, Object>();
    q.put("card_number", cardNumber);
    return Card.fromJson(call("GET", "/open/v1/benefit-cards/detail" + query(q), null, Auth.M, null));
  }

  /** One page of fulfillment records (role provider or issuer; null for provider) with id greater than after. */
  public FulfillmentList listFulfillments(String role, Long after, Integer limit) {
    Map<String, Object> q = new LinkedHashMap<String, Object>();
    q.put("role", role);
    q.put("after", after);
    q.put("limit", limit);
    return FulfillmentList.fromJson(call("GET", "/open/v1/benefit-cards/fulfillments" + query(q), null, Auth.M,
        null));
  }

  /** Every fulfillment record of the role, page by page (the cursor is the last record id). */
  public Iterable<Fulfillment> iterateFulfillments(final String role) {
    final int limit = 100;
    return new Paginator<Fulfillment>(null, cursor -> {
      List<Fulfillment> items = listFulfillments(role, cursor == null ? null : Long.valueOf(cursor), limit)
          .getFulfillments();
      String next = null;
      if (items != null && items.size() >= limit) {
        next = String.valueOf(items.get(items.size() - 1).getFulfillmentRecordId());
      }
      return new Paginator.Page<Fulfillment>(items, next);
    });
  }

  /** Records the user's 1-5 rating of a fulfillment. */
  public RatingResult rateFulfillment(long recordId, RatingRequest rating) {
    return rateFulfillment(recordId, rating, null);
  }

  /** {@link #rateFulfillment(long, RatingRequest)} with per-call options. */
  public RatingResult rateFulfillment(long recordId, RatingRequest rating, RequestOptions options) {
    return RatingResult.fromJson(
        call("POST", "/open/v1/benefit-cards/fulfillments/" + recordId + "/rating", rating, Auth.M, options));
  }

  // ---- transport ----

  private enum Auth {
    /** The routes the document signs with scheme M: signed with the client's {@link Scheme}. */
    M,
    /** The routes that take scheme H only. */
    H,
    BEARER,
    BASIC
  }

  private static final class Response {
    final int status;
    final byte[] body;
    final String requestId;
    final Long retryAfter;

    Response(int status, byte[] body, String requestId, Long retryAfter) {
      this.status = status;
      this.body = body;
      this.requestId = requestId;
      this.retryAfter = retryAfter;
    }
  }

  /** Sends a JSON request and returns the envelope's data (null when the operation returns none). */
  private Object call(String method, String pathAndQuery, Object body, Auth auth, RequestOptions options) {
    byte[] bytes = body == null ? (method.equals("POST") ? new byte[0] : null) : Json.writeBytes(body);
    Response r = send(method, pathAndQuery, bytes, bytes == null ? null : "application/json", auth, options,
        false);
    Object parsed = parse(r);
    Map<String, Object> env = JsonValues.asObject(parsed, "envelope");
    if (env == null || !Boolean.TRUE.equals(env.get("success"))) {
      throw PartnerApiException.fromResponse(r.status, r.body, r.requestId, r.retryAfter);
    }
    return env.get("data");
  }

  private static Object parse(Response r) {
    try {
      return Json.parse(r.body);
    } catch (JsonException e) {
      throw new PartnerApiException(r.status, null, "response is not JSON: " + e.getMessage(), null, r.requestId,
          null, new String(r.body, StandardCharsets.UTF_8));
    }
  }

  private Response send(String method, String pathAndQuery, byte[] body, String contentType, Auth auth,
      RequestOptions options, boolean idempotentByNature) {
    String key = options == null ? null : options.getIdempotencyKey();
    boolean write = !method.equals("GET");
    if (write && key == null && autoIdempotencyKeys && (auth == Auth.M || auth == Auth.H)) {
      key = UUID.randomUUID().toString();
    }
    boolean retryable = !write || key != null || idempotentByNature;
    String requestId = options == null ? null : options.getRequestId();
    URL url;
    try {
      url = new URL(baseUrl + pathAndQuery);
    } catch (IOException e) {
      throw new IllegalArgumentException("bad URL " + baseUrl + pathAndQuery, e);
    }
    for (int attempt = 1; ; attempt++) {
      Response r;
      try {
        r = once(method, url, body, contentType, auth, key, requestId);
      } catch (IOException e) {
        if (!retryable || attempt >= retry.getMaxAttempts()) {
          throw new UncheckedIOException(method + " " + url.getPath() + ": " + e.getMessage(), e);
        }
        pause(attempt, null);
        continue;
      }
      if (r.status >= 200 && r.status < 300) {
        return r;
      }
      boolean again = r.status == 429 || r.status == 503
          || (r.status == 409 && key != null && r.retryAfter != null); // IDEMPOTENCY_KEY_IN_PROGRESS
      if (again && retryable && attempt < retry.getMaxAttempts()) {
        pause(attempt, r.retryAfter);
        continue;
      }
      throw PartnerApiException.fromResponse(r.status, r.body, r.requestId, r.retryAfter);
    }
  }

  private void pause(int attempt, Long retryAfter) {
    try {
      retry.sleep(retry.delayMillis(attempt, retryAfter));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UncheckedIOException(new java.io.InterruptedIOException("interrupted while backing off"));
    }
  }

  private Response once(String method, URL url, byte[] body, String contentType, Auth auth, String key,
      String requestId) throws IOException {
    Map<String, String> h = new LinkedHashMap<String, String>();
    h.put("Accept", "application/json");
    h.put("User-Agent", userAgent);
    if (requestId != null) {
      h.put("X-Request-Id", requestId);
    }
    if (key != null) {
      h.put("Idempotency-Key", key);
    }
    // Signed per attempt: a retry gets a fresh timestamp and nonce (the platform refuses a reused nonce).
    long ts = clockMillis.getAsLong() / 1000L;
    byte[] signed = body == null ? new byte[0] : body;
    if (auth == Auth.M && scheme == Scheme.H) {
      auth = Auth.H; // the platform takes scheme H on every partner route
    }
    switch (auth) {
      case M: {
        h.put("X-App-Id", appId);
        h.put("X-Timestamp", Long.toString(ts));
        h.put("X-Signature", Signatures.signM(appKey, ts, appSecret, signed));
        break;
      }
      case H: {
        byte[] n = new byte[12];
        random.nextBytes(n);
        String nonce = Signatures.hex(n);
        h.put("X-App-Key", appKey);
        h.put("X-Timestamp", Long.toString(ts));
        h.put("X-Nonce", nonce);
        h.put("X-Signature", Signatures.signH(method, url.getFile(), ts, nonce, signed, appSecret));
        break;
      }
      case BEARER:
        h.put("Authorization", "Bearer " + token());
        h.put("X-App-Key", appKey);
        break;
      case BASIC:
        h.put("Authorization", "Basic " + Base64.getEncoder()
            .encodeToString((formEscape(appKey) + ":" + formEscape(appSecret)).getBytes(StandardCharsets.UTF_8)));
        break;
      default:
        throw new IllegalStateException();
    }
    if (body != null) {
      h.put("Content-Type", contentType);
    }
    Http.Result r = Http.exchange(method, url, h, body, connectTimeoutMillis, readTimeoutMillis);
    return new Response(r.status, r.body, r.requestId, retryAfter(r.retryAfter));
  }

  private String token() {
    synchronized (tokenLock) {
      if (accessToken != null && System.currentTimeMillis() < accessTokenExpiresAtMillis) {
        return accessToken;
      }
    }
    oauthToken();
    synchronized (tokenLock) {
      return accessToken;
    }
  }

  static Long retryAfter(String h) {
    if (h == null) {
      return null;
    }
    try {
      long s = Long.parseLong(h.trim());
      return s < 0 ? null : s;
    } catch (NumberFormatException e) {
      return null; // HTTP-date form: fall back to backoff
    }
  }

  private static String formEscape(String s) {
    try {
      return URLEncoder.encode(s, "UTF-8");
    } catch (UnsupportedEncodingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static byte[] formBody(Map<String, Object> form) {
    return query(form).substring(1).getBytes(StandardCharsets.UTF_8);
  }

  static String query(Map<String, Object> q) {
    StringBuilder sb = new StringBuilder();
    for (Map.Entry<String, Object> e : q.entrySet()) {
      if (e.getValue() == null) {
        continue;
      }
      sb.append(sb.length() == 0 ? '?' : '&').append(formEscape(e.getKey())).append('=')
          .append(formEscape(String.valueOf(e.getValue())).replace("+", "%20"));
    }
    return sb.toString();
  }

  private static String pathSegment(String s) {
    return formEscape(s).replace("+", "%20");
  }
}
