package com.healthtech.partneropen.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.healthtech.partneropen.model.FamilyMemberUpsertInput;
import com.healthtech.partneropen.model.RegisterResult;
import com.healthtech.partneropen.model.UserPatch;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {
  @Test
  void parsesEveryKindAndKeepsMemberOrder() {
    Object v = Json.parse("{\"b\":1,\"a\":[true,false,null,\"x\\u00e9\\n\",-2.5e1,9223372036854775808]}");
    Map<?, ?> m = (Map<?, ?>) v;
    assertEquals(Arrays.asList("b", "a"), Arrays.asList(m.keySet().toArray()));
    assertEquals(1L, m.get("b"));
    List<?> a = (List<?>) m.get("a");
    assertEquals(Arrays.asList(true, false, null, "xé\n", -25.0, new BigInteger("9223372036854775808")), a);
  }

  @Test
  void utf8BytesRoundTrip() {
    byte[] in = "{\"name\":\"张三\",\"q\":\"\\\"\\\\/\"}".getBytes(StandardCharsets.UTF_8);
    Object v = Json.parse(in);
    assertEquals("{\"name\":\"张三\",\"q\":\"\\\"\\\\/\"}", Json.write(v));
    assertEquals("\"\\u0001\\u2028\"", Json.write("\u0001\u2028"));
  }

  @Test
  void refusesMalformedInput() {
    for (String bad : new String[] {"", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\\x\"", "{} x", "nul", "\"a\nb\""}) {
      assertThrows(JsonException.class, () -> Json.parse(bad), bad);
    }
  }

  @Test
  void refusesDeepNestingInsteadOfOverflowingTheStack() {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < 10000; i++) {
      sb.append('[');
    }
    assertThrows(JsonException.class, () -> Json.parse(sb.toString()));
  }

  @Test
  void modelsSendOnlyWhatWasSetAndKeepExplicitNull() {
    UserPatch p = new UserPatch().setName("Li Lei").setNickname(null);
    assertEquals("{\"name\":\"Li Lei\",\"nickname\":null}", Json.write(p));
    assertTrue(p.isSet("nickname"));
    assertFalse(p.isSet("phone"));
    FamilyMemberUpsertInput m = new FamilyMemberUpsertInput().setAppUserId("m1").setAppGroupId(7L)
        .setName("Mum").setRelationship("MOTHER").setHeight(160L);
    assertEquals("{\"app_user_id\":\"m1\",\"app_group_id\":7,\"name\":\"Mum\",\"relationship\":\"MOTHER\","
        + "\"height\":160}", Json.write(m));
  }

  @Test
  void modelsParseTypedFieldsTolerateNewOnesAndNameTheBadOne() {
    RegisterResult r = RegisterResult.fromJson(Json.parse("{\"open_user_id\":5,\"channel_user_id\":\"u\","
        + "\"created\":true,\"family_groups\":[{\"family_group_id\":9,\"app_group_id\":1}],"
        + "\"family_members\":[],\"brand_new\":1}"));
    assertEquals(5L, r.getOpenUserId());
    assertEquals(9L, r.getFamilyGroups().get(0).getFamilyGroupId());
    assertTrue(r.getFamilyMembers().isEmpty());
    assertEquals(1L, r.raw().get("brand_new"));
    JsonException e = assertThrows(JsonException.class,
        () -> RegisterResult.fromJson(Json.parse("{\"family_groups\":[{\"family_group_id\":\"x\"}]}")));
    assertTrue(e.getMessage().contains("family_groups[0]") && e.getMessage().contains("family_group_id"),
        e.getMessage());
    assertNull(RegisterResult.fromJson(Json.parse("{}")).getCreated());
  }
}
