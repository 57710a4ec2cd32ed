package com.healthtech.partneropen.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.healthtech.partneropen.TestFiles;
import com.healthtech.partneropen.json.Json;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PluginLaunchTest {
  /** The URL built from a host response matches the platform's own published launch-URL vectors byte for byte. */
  @Test
  @SuppressWarnings("unchecked")
  void buildsThePlatformsLaunchUrls() throws Exception {
    Map<String, Object> v = (Map<String, Object>) Json.parse(Files.readAllBytes(TestFiles.pluginVectors()));
    List<Object> cases = (List<Object>) v.get("url");
    assertEquals(false, cases.isEmpty());
    for (Object o : cases) {
      Map<String, Object> c = (Map<String, Object>) o;
      Map<String, Object> resp = Map.of("code", 0L, "data", c.get("launch"));
      PluginLaunch l = PluginLaunch.fromHostResponse(Json.write(resp));
      assertEquals(c.get("url"), l.toUrl(Boolean.TRUE.equals(c.get("sandbox"))));
    }
  }

  @Test
  void refusesFailedOrIncompleteHostResponses() {
    assertThrows(IllegalArgumentException.class, () -> PluginLaunch.fromHostResponse("{\"code\":1}"));
    assertThrows(IllegalArgumentException.class, () -> PluginLaunch.fromHostResponse("not json"));
    assertThrows(IllegalArgumentException.class, () -> PluginLaunch.fromHostResponse(
        "{\"code\":0,\"data\":{\"appKey\":\"a\",\"thirdUserId\":\"u\",\"userProfile\":\"p\",\"timestamp\":\"1700000000\","
            + "\"nonce\":\"n\",\"deviceKey\":\"HOME_SPO2_RING\",\"measureMode\":\"SPO2\"}}"));
    assertThrows(IllegalArgumentException.class, () -> PluginLaunch.fromHostResponse(
        "{\"code\":0,\"data\":{\"appKey\":\"a\",\"thirdUserId\":\"u\",\"userProfile\":\"p\","
            + "\"timestamp\":\"1700000000000\",\"nonce\":\"n\",\"sign\":\"s\",\"deviceKey\":\"d\",\"measureMode\":\"m\"}}"));
  }

  @Test
  void parsesMeasureResults() {
    MeasureResult ok = MeasureResult.parse("{\"status\":\"success\",\"measureId\":\"M-9\"}");
    assertEquals(MeasureResult.Outcome.SUCCESS, ok.getOutcome());
    assertEquals("M-9", ok.getMeasureId());
    assertEquals(MeasureResult.Outcome.CANCEL, MeasureResult.parse("{\"status\":\"cancel\"}").getOutcome());
    MeasureResult bad = MeasureResult.parse("{\"status\":\"fail\",\"errorCode\":\"E_BT\"}");
    assertEquals(MeasureResult.Outcome.FAILURE, bad.getOutcome());
    assertEquals("E_BT", bad.getErrorCode());
    assertThrows(IllegalArgumentException.class, () -> MeasureResult.parse("{\"status\":\"success\"}"));
    assertThrows(IllegalArgumentException.class, () -> MeasureResult.parse("{}"));
  }
}
