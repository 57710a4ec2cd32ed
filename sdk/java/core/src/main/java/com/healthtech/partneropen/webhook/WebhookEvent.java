package com.healthtech.partneropen.webhook;

import com.healthtech.partneropen.json.Json;
import com.healthtech.partneropen.json.JsonModel;
import com.healthtech.partneropen.json.JsonValues;
import com.healthtech.partneropen.model.ChannelUserWebhook;
import com.healthtech.partneropen.model.FamilyGroupCreatedData;
import com.healthtech.partneropen.model.FamilyGroupDeletedData;
import com.healthtech.partneropen.model.FamilyMemberCreatedData;
import com.healthtech.partneropen.model.FamilyMemberDeletedData;
import com.healthtech.partneropen.model.FamilyMemberUpdatedData;
import com.healthtech.partneropen.model.HealthReportWebhook;
import com.healthtech.partneropen.model.OrderShippedWebhook;
import com.healthtech.partneropen.model.WebhookTestEvent;
import com.healthtech.partneropen.model.PluginReportReadyWebhook;
import com.healthtech.partneropen.model.UserProfileUpdatedData;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A webhook body (or a delivery-log / feed payload) parsed into the typed model of its event, so receivers switch
 * on {@link #getType()} and read typed fields instead of maps. Parse only after verifying the signature (see the
 * server artifact's Webhooks.verify); the bytes parsed must be the raw bytes that were verified.
 *
 * <p>Event types this SDK does not know yet still parse: {@link #getBody()} is null and {@link #raw()} holds the
 * JSON, as the spec asks receivers to tolerate new fields and events.
 */
public final class WebhookEvent {
  /** health.report.created: a report was generated; pull it with the report id. */
  public static final String HEALTH_REPORT_CREATED = "health.report.created";
  /** health.report.updated: a report changed (for example re-interpreted); pull it again. */
  public static final String HEALTH_REPORT_UPDATED = "health.report.updated";
  /** plugin.report.ready: the measurement plugin stored a measurement. */
  public static final String PLUGIN_REPORT_READY = "plugin.report.ready";
  /** order.shipped: an order (or part of it) was shipped. */
  public static final String ORDER_SHIPPED = "order.shipped";
  /** webhook.test: a test sent to one endpoint from the developer portal; answer 2xx and ignore it. */
  public static final String WEBHOOK_TEST = "webhook.test";
  /** user.profile.updated: a PATCH changed the user's profile. */
  public static final String USER_PROFILE_UPDATED = "user.profile.updated";
  /** user.family_group.created: a family group was created or renamed. */
  public static final String USER_FAMILY_GROUP_CREATED = "user.family_group.created";
  /** user.family_group.deleted: a family group was dissolved. */
  public static final String USER_FAMILY_GROUP_DELETED = "user.family_group.deleted";
  /** user.family_member.created: a family member was added. */
  public static final String USER_FAMILY_MEMBER_CREATED = "user.family_member.created";
  /** user.family_member.updated: a family member changed. */
  public static final String USER_FAMILY_MEMBER_UPDATED = "user.family_member.updated";
  /** user.family_member.deleted: a family member was deleted. */
  public static final String USER_FAMILY_MEMBER_DELETED = "user.family_member.deleted";

  private static final Map<String, JsonValues.Converter<? extends JsonModel>> BODIES;
  private static final Map<String, JsonValues.Converter<? extends JsonModel>> CHANNEL_DATA;
  private static final Map<String, Class<?>> BODY_CLASSES;
  private static final Map<String, Class<?>> DATA_CLASSES;

  static {
    Map<String, JsonValues.Converter<? extends JsonModel>> b = new LinkedHashMap<>();
    Map<String, JsonValues.Converter<? extends JsonModel>> d = new LinkedHashMap<>();
    Map<String, Class<?>> bc = new LinkedHashMap<>();
    Map<String, Class<?>> dc = new LinkedHashMap<>();
    b.put(HEALTH_REPORT_CREATED, HealthReportWebhook::fromJson);
    bc.put(HEALTH_REPORT_CREATED, HealthReportWebhook.class);
    b.put(HEALTH_REPORT_UPDATED, HealthReportWebhook::fromJson);
    bc.put(HEALTH_REPORT_UPDATED, HealthReportWebhook.class);
    b.put(PLUGIN_REPORT_READY, PluginReportReadyWebhook::fromJson);
    bc.put(PLUGIN_REPORT_READY, PluginReportReadyWebhook.class);
    b.put(ORDER_SHIPPED, OrderShippedWebhook::fromJson);
    bc.put(ORDER_SHIPPED, OrderShippedWebhook.class);
    b.put(WEBHOOK_TEST, WebhookTestEvent::fromJson);
    bc.put(WEBHOOK_TEST, WebhookTestEvent.class);
    d.put(USER_PROFILE_UPDATED, UserProfileUpdatedData::fromJson);
    dc.put(USER_PROFILE_UPDATED, UserProfileUpdatedData.class);
    d.put(USER_FAMILY_GROUP_CREATED, FamilyGroupCreatedData::fromJson);
    dc.put(USER_FAMILY_GROUP_CREATED, FamilyGroupCreatedData.class);
    d.put(USER_FAMILY_GROUP_DELETED, FamilyGroupDeletedData::fromJson);
    dc.put(USER_FAMILY_GROUP_DELETED, FamilyGroupDeletedData.class);
    d.put(USER_FAMILY_MEMBER_CREATED, FamilyMemberCreatedData::fromJson);
    dc.put(USER_FAMILY_MEMBER_CREATED, FamilyMemberCreatedData.class);
    d.put(USER_FAMILY_MEMBER_UPDATED, FamilyMemberUpdatedData::fromJson);
    dc.put(USER_FAMILY_MEMBER_UPDATED, FamilyMemberUpdatedData.class);
    d.put(USER_FAMILY_MEMBER_DELETED, FamilyMemberDeletedData::fromJson);
    dc.put(USER_FAMILY_MEMBER_DELETED, FamilyMemberDeletedData.class);
    for (String e : d.keySet()) {
      b.put(e, ChannelUserWebhook::fromJson);
      bc.put(e, ChannelUserWebhook.class);
    }
    BODIES = Collections.unmodifiableMap(b);
    CHANNEL_DATA = Collections.unmodifiableMap(d);
    BODY_CLASSES = Collections.unmodifiableMap(bc);
    DATA_CLASSES = Collections.unmodifiableMap(dc);
  }

  private final String type;
  private final String deliveryId;
  private final JsonModel body;
  private final JsonModel data;
  private final Map<String, Object> raw;

  private WebhookEvent(String type, String deliveryId, JsonModel body, JsonModel data, Map<String, Object> raw) {
    this.type = type;
    this.deliveryId = deliveryId;
    this.body = body;
    this.data = data;
    this.raw = raw;
  }

  /** Parses the raw (already verified) request body bytes. */
  public static WebhookEvent parse(byte[] body) {
    return fromJson(Json.parse(body));
  }

  /** Parses a JSON object already decoded (a delivery-log or feed payload). */
  public static WebhookEvent fromJson(Object json) {
    Map<String, Object> m = JsonValues.asObject(json, "webhook");
    if (m == null) {
      throw new com.healthtech.partneropen.json.JsonException("webhook: expected an object, got null");
    }
    String type = JsonValues.asString(m.get("event"), "event");
    String id = JsonValues.asString(m.get("delivery_id"), "delivery_id");
    // Typed only when the platform's event catalog (EventTypes) lists the type.
    JsonValues.Converter<? extends JsonModel> c = type == null || !EventTypes.isCatalogued(type) ? null : BODIES.get(type);
    JsonModel body = c == null ? null : c.convert(m);
    JsonModel data = null;
    JsonValues.Converter<? extends JsonModel> dc = type == null ? null : CHANNEL_DATA.get(type);
    if (dc != null && m.get("data") != null) {
      data = JsonValues.as(m.get("data"), "data", dc);
    }
    return new WebhookEvent(type, id, body, data, Collections.unmodifiableMap(m));
  }

  /** The event type (the body's {@code event}, equal to the X-Webhook-Event header). */
  public String getType() {
    return type;
  }

  /** The delivery id, stable across retries and resends: de-duplicate on it. */
  public String getDeliveryId() {
    return deliveryId;
  }

  /** Whether this SDK knows the event type (and so {@link #getBody()} is typed). */
  public boolean isKnown() {
    return body != null;
  }

  /** The typed body (HealthReportWebhook, PluginReportReadyWebhook, OrderShippedWebhook, ChannelUserWebhook). */
  public JsonModel getBody() {
    return body;
  }

  /** The typed {@code data} of a channel-user event (for example FamilyMemberUpdatedData), else null. */
  public JsonModel getData() {
    return data;
  }

  /** The body as JSON, including members newer than this SDK. */
  public Map<String, Object> raw() {
    return raw;
  }

  /** The body as a health.report.* event; throws if the event is of another type. */
  public HealthReportWebhook asHealthReport() {
    return as(HealthReportWebhook.class);
  }

  /** The body as plugin.report.ready; throws if the event is of another type. */
  public PluginReportReadyWebhook asPluginReportReady() {
    return as(PluginReportReadyWebhook.class);
  }

  /** The body as order.shipped; throws if the event is of another type. */
  public OrderShippedWebhook asOrderShipped() {
    return as(OrderShippedWebhook.class);
  }

  /** The body as webhook.test; throws if the event is of another type. */
  public WebhookTestEvent asTest() {
    return as(WebhookTestEvent.class);
  }

  /** The body as a user.* event (its typed data is {@link #getData()}); throws if of another type. */
  public ChannelUserWebhook asChannelUser() {
    return as(ChannelUserWebhook.class);
  }

  /** The typed data of a channel-user event as the given class; throws if the event carries other data. */
  public <T extends JsonModel> T dataAs(Class<T> cls) {
    if (!cls.isInstance(data)) {
      throw new IllegalStateException("event " + type + " has no data of type " + cls.getSimpleName());
    }
    return cls.cast(data);
  }

  private <T> T as(Class<T> cls) {
    if (!cls.isInstance(body)) {
      throw new IllegalStateException("event " + type + " is not a " + cls.getSimpleName());
    }
    return cls.cast(body);
  }

  /** Body model class per event type this SDK knows (for tests that compare with the OpenAPI file). */
  public static Map<String, Class<?>> bodyClasses() {
    return BODY_CLASSES;
  }

  /** Data model class per channel-user event type (for tests that compare with the OpenAPI file). */
  public static Map<String, Class<?>> dataClasses() {
    return DATA_CLASSES;
  }

  @Override
  public String toString() {
    return "WebhookEvent{" + type + ", " + deliveryId + "}";
  }
}
