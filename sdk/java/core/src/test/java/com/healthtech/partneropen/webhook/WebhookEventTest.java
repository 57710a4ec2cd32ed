package com.healthtech.partneropen.webhook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.healthtech.partneropen.TestFiles;
import com.healthtech.partneropen.codegen.ModelGenerator;
import com.healthtech.partneropen.json.Json;
import com.healthtech.partneropen.model.FamilyMemberUpdatedData;
import com.healthtech.partneropen.model.HealthReportWebhook;
import com.healthtech.partneropen.model.PluginReportReadyWebhook;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class WebhookEventTest {
  /** The platform's example of every catalogued type (made by its dispatcher's renderer) parses typed. */
  @Test
  void everyCataloguedEventParsesTyped() throws Exception {
    assertTrue(EventTypes.ALL.size() >= 11);
    for (EventTypes.EventType t : EventTypes.ALL) {
      byte[] body = java.nio.file.Files.readAllBytes(TestFiles.repoRoot()
          .resolve("internal/eventtypes/examples/" + t.getName() + ".v" + t.getVersion() + ".json"));
      WebhookEvent ev = WebhookEvent.parse(body);
      assertEquals(t.getName(), ev.getType());
      assertTrue(ev.isKnown(), t.getName());
      assertNotNull(ev.getDeliveryId());
    }
    assertEquals(new java.util.TreeSet<>(WebhookEvent.bodyClasses().keySet()),
        EventTypes.ALL.stream().map(EventTypes.EventType::getName).collect(java.util.stream.Collectors.toCollection(java.util.TreeSet::new)));
    assertFalse(EventTypes.isCatalogued("health.report.deleted"));
    assertFalse(WebhookEvent.parse("{\"event\":\"health.report.deleted\",\"delivery_id\":\"d\"}".getBytes(StandardCharsets.UTF_8)).isKnown());
  }

  /** Every event of x-webhooks maps to the body and data schemas the OpenAPI file names for it. */
  @Test
  @SuppressWarnings("unchecked")
  void everyEventOfTheOpenApiFileIsTyped() throws Exception {
    Map<String, Object> root = ModelGenerator.load(TestFiles.openapi());
    Map<String, Object> hooks = (Map<String, Object>) root.get("x-webhooks");
    Map<String, String> wantBody = new TreeMap<>();
    Map<String, String> wantData = new TreeMap<>();
    for (Map.Entry<String, Object> e : hooks.entrySet()) {
      Map<String, Object> post = (Map<String, Object>) ((Map<String, Object>) e.getValue()).get("post");
      Map<String, Object> schema = (Map<String, Object>) ((Map<String, Object>) ((Map<String, Object>)
          ((Map<String, Object>) post.get("requestBody")).get("content")).get("application/json")).get("schema");
      String base = null;
      String data = null;
      List<Object> parts = schema.containsKey("allOf") ? (List<Object>) schema.get("allOf") : List.of(schema);
      for (Object p : parts) {
        Map<String, Object> pm = (Map<String, Object>) p;
        if (pm.containsKey("$ref")) {
          base = last((String) pm.get("$ref"));
        }
        Map<String, Object> props = (Map<String, Object>) pm.get("properties");
        if (props != null && props.get("data") instanceof Map
            && ((Map<String, Object>) props.get("data")).containsKey("$ref")) {
          data = last((String) ((Map<String, Object>) props.get("data")).get("$ref"));
        }
      }
      wantBody.put(e.getKey(), base);
      if (data != null) {
        wantData.put(e.getKey(), data);
      }
    }
    Map<String, String> haveBody = new TreeMap<>();
    WebhookEvent.bodyClasses().forEach((k, v) -> haveBody.put(k, v.getSimpleName()));
    Map<String, String> haveData = new TreeMap<>();
    WebhookEvent.dataClasses().forEach((k, v) -> haveData.put(k, v.getSimpleName()));
    assertEquals(11, wantBody.size());
    assertEquals(wantBody, haveBody);
    assertEquals(wantData, haveData);
  }

  private static String last(String ref) {
    return ref.substring(ref.lastIndexOf('/') + 1);
  }

  @Test
  void parsesAHealthReportEventFromRawBytes() {
    byte[] body = ("{\"event\":\"health.report.created\",\"delivery_id\":\"d-1\",\"app_id\":3,"
        + "\"open_user_id\":42,\"channel_user_id\":\"u-1\",\"open_report_id\":90017,"
        + "\"report_type\":\"BLOOD_PRESSURE\",\"occurred_at\":\"2026-11-23T10:00:00+08:00\"}")
        .getBytes(StandardCharsets.UTF_8);
    WebhookEvent e = WebhookEvent.parse(body);
    assertEquals(WebhookEvent.HEALTH_REPORT_CREATED, e.getType());
    assertEquals("d-1", e.getDeliveryId());
    HealthReportWebhook h = e.asHealthReport();
    assertEquals(90017L, h.getOpenReportId());
    assertEquals("u-1", h.getChannelUserId());
    assertThrows(IllegalStateException.class, e::asOrderShipped);
  }

  @Test
  void channelUserEventsCarryTypedData() {
    WebhookEvent e = WebhookEvent.fromJson(Json.parse("{\"event\":\"user.family_member.updated\","
        + "\"delivery_id\":\"d\",\"app_id\":1,\"open_user_id\":2,\"channel_user_id\":\"c\","
        + "\"occurred_at\":\"x\",\"data\":{\"member_id\":11,\"app_user_id\":\"m\",\"family_group_id\":4,"
        + "\"app_group_id\":1,\"changed_fields\":[\"name\"]}}"));
    FamilyMemberUpdatedData d = e.dataAs(FamilyMemberUpdatedData.class);
    assertEquals(11L, d.getMemberId());
    assertEquals(2L, e.asChannelUser().getOpenUserId());
  }

  @Test
  void pluginEventKeepsNullsAndUnknownEventsStillParse() {
    WebhookEvent e = WebhookEvent.fromJson(Json.parse("{\"event\":\"plugin.report.ready\",\"delivery_id\":\"d\","
        + "\"app_id\":1,\"measurement_no\":\"M1\",\"third_user_id\":null,\"platform_user_id\":null,"
        + "\"report_type\":\"blood_pressure\",\"report_url\":null,\"metadata\":null,\"occurred_at\":\"t\"}"));
    PluginReportReadyWebhook p = e.asPluginReportReady();
    assertEquals("M1", p.getMeasurementNo());
    assertTrue(p.isSet("third_user_id"));
    assertNull(p.getThirdUserId());
    WebhookEvent u = WebhookEvent.fromJson(Json.parse("{\"event\":\"device.new_thing\",\"delivery_id\":\"z\"}"));
    assertFalse(u.isKnown());
    assertNotNull(u.raw());
    assertEquals("z", u.getDeliveryId());
  }
}
