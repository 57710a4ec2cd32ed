package com.healthtech.partneropen.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.healthtech.partneropen.json.Json;
import com.healthtech.partneropen.plugin.PluginLaunch;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Every signer and verifier against ../shared/vectors/signatures.json (unchanged) and the platform's plugin vectors. */
class VectorsTest {
  static Path repoRoot() {
    String p = System.getProperty("partneropen.repoRoot");
    return (p != null ? Paths.get(p) : Paths.get("../../..")).toAbsolutePath().normalize();
  }

  static Path vectorsPath() {
    String env = System.getenv("PLATFORM_VECTORS");
    if (env != null && !env.isEmpty()) {
      return Paths.get(env);
    }
    return repoRoot().resolve("../shared/vectors/signatures.json").normalize();
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> vectors() throws Exception {
    Path p = vectorsPath();
    assertTrue(Files.exists(p), "shared vectors not found at " + p + " (set PLATFORM_VECTORS)");
    return (Map<String, Object>) Json.parse(Files.readAllBytes(p));
  }

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> cases(Map<String, Object> v, String section) {
    List<Map<String, Object>> c = (List<Map<String, Object>>) ((Map<String, Object>) v.get(section)).get("cases");
    assertTrue(c.size() > 0, section + " has no cases");
    return c;
  }

  static byte[] body(Map<String, Object> c) {
    byte[] fromB64 = Base64.getDecoder().decode((String) c.get("body_base64"));
    assertEquals(new String(fromB64, StandardCharsets.UTF_8), c.get("body"), "vector body and body_base64 agree");
    return fromB64;
  }

  @Test
  @SuppressWarnings("unchecked")
  void schemeM() throws Exception {
    Map<String, Object> v = vectors();
    Map<String, Object> cred = (Map<String, Object>) v.get("credentials");
    for (Map<String, Object> c : cases(v, "scheme_m")) {
      String sig = Signatures.signM((String) cred.get("app_key"), (Long) c.get("timestamp"),
          (String) cred.get("app_secret"), body(c));
      assertEquals(c.get("signature"), sig, (String) c.get("name"));
      assertEquals(((Map<String, Object>) c.get("headers")).get("X-Signature"), sig);
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  void schemeH() throws Exception {
    Map<String, Object> v = vectors();
    Map<String, Object> cred = (Map<String, Object>) v.get("credentials");
    for (Map<String, Object> c : cases(v, "scheme_h")) {
      long ts = (Long) c.get("timestamp");
      assertEquals(c.get("sign_string"), Signatures.schemeHSignString((String) c.get("method"),
          (String) c.get("uri"), ts, (String) c.get("nonce"), body(c)), (String) c.get("name"));
      assertEquals(c.get("signature"), Signatures.signH((String) c.get("method"), (String) c.get("uri"), ts,
          (String) c.get("nonce"), body(c), (String) cred.get("app_secret")), (String) c.get("name"));
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  void pluginLaunch() throws Exception {
    Map<String, Object> v = vectors();
    Map<String, Object> cred = (Map<String, Object>) v.get("credentials");
    for (Map<String, Object> c : cases(v, "plugin_launch")) {
      assertEquals(c.get("signature"), Signatures.signLaunch((String) cred.get("app_secret"),
          (String) c.get("app_key"), (String) c.get("third_user_id"), String.valueOf(c.get("timestamp")),
          (String) c.get("nonce")));
    }
  }

  @Test
  @SuppressWarnings("unchecked")
  void webhookVerification() throws Exception {
    Map<String, Object> v = vectors();
    String secret = (String) ((Map<String, Object>) v.get("credentials")).get("webhook_secret");
    for (Map<String, Object> c : cases(v, "webhook")) {
      byte[] b = body(c);
      String ts = String.valueOf(c.get("timestamp"));
      String sig = (String) c.get("signature");
      long validAt = (Long) c.get("valid_at");
      long staleAt = (Long) c.get("stale_at");
      assertEquals(sig, Signatures.signWebhook(secret, (Long) c.get("timestamp"), b));
      Webhooks.verify(secret, ts, sig, b, 300, validAt);
      Webhooks.verify(secret, ts, sig.toUpperCase(), b, 300, validAt);
      expect(WebhookVerificationException.Reason.STALE_TIMESTAMP, () -> Webhooks.verify(secret, ts, sig, b, 300,
          staleAt));
      // exactly at the edge of the window is still accepted, one second past is not
      long t = (Long) c.get("timestamp");
      Webhooks.verify(secret, ts, sig, b, 300, t + 300);
      Webhooks.verify(secret, ts, sig, b, 300, t - 300);
      expect(WebhookVerificationException.Reason.STALE_TIMESTAMP, () -> Webhooks.verify(secret, ts, sig, b, 300,
          t - 301));
      byte[] tampered = b.clone();
      tampered[tampered.length - 1] ^= 1;
      expect(WebhookVerificationException.Reason.SIGNATURE_MISMATCH,
          () -> Webhooks.verify(secret, ts, sig, tampered, 300, validAt));
      // re-serialised JSON is not the raw body
      byte[] reserialised = Json.writeBytes(Json.parse(b));
      if (!java.util.Arrays.equals(reserialised, b)) {
        expect(WebhookVerificationException.Reason.SIGNATURE_MISMATCH,
            () -> Webhooks.verify(secret, ts, sig, reserialised, 300, validAt));
      }
      expect(WebhookVerificationException.Reason.SIGNATURE_MISMATCH,
          () -> Webhooks.verify(secret + "x", ts, sig, b, 300, validAt));
      expect(WebhookVerificationException.Reason.SIGNATURE_MISMATCH,
          () -> Webhooks.verify(secret, String.valueOf(t + 1), sig, b, 300, validAt));
      expect(WebhookVerificationException.Reason.MALFORMED, () -> Webhooks.verify(secret, "abc", sig, b, 300,
          validAt));
      expect(WebhookVerificationException.Reason.MALFORMED, () -> Webhooks.verify(secret, ts, sig.substring(2), b,
          300, validAt));
      expect(WebhookVerificationException.Reason.MALFORMED, () -> Webhooks.verify(secret, ts, null, b, 300,
          validAt));
    }
  }

  interface Call {
    void run() throws Exception;
  }

  static void expect(WebhookVerificationException.Reason reason, Call c) {
    WebhookVerificationException e = assertThrows(WebhookVerificationException.class, c::run);
    assertEquals(reason, e.getReason(), e.getMessage());
  }

  /** Profile encryption reproduces the platform's own plugin vectors (key, ciphertext) and opens them again. */
  @Test
  @SuppressWarnings("unchecked")
  void pluginProfileMatchesThePlatform() throws Exception {
    Map<String, Object> v = (Map<String, Object>) Json.parse(
        Files.readAllBytes(repoRoot().resolve("internal/measureplugin/testdata/vectors.json")));
    for (Object o : (List<Object>) v.get("profile")) {
      Map<String, Object> c = (Map<String, Object>) o;
      String secret = (String) c.get("appSecret");
      assertEquals(c.get("key"), Signatures.hex(PluginHost.profileKey(secret)));
      PluginHost host = new PluginHost((String) c.get("appKey"), secret);
      PluginHost.Profile p = PluginHost.Profile.fromJson(((String) c.get("plaintext")).getBytes(StandardCharsets.UTF_8));
      assertEquals(c.get("plaintext"), new String(p.toJsonBytes(), StandardCharsets.UTF_8));
      byte[] iv = Signatures.unhex((String) c.get("iv"));
      assertEquals(c.get("userProfile"), host.encryptProfile((String) c.get("thirdUserId"), p, iv));
      PluginHost.Profile back = host.decryptProfile((String) c.get("thirdUserId"), (String) c.get("userProfile"));
      assertEquals(p.phone, back.phone);
      assertEquals(p.height, back.height);
      assertThrows(java.security.GeneralSecurityException.class,
          () -> host.decryptProfile("someone-else", (String) c.get("userProfile")));
    }
    for (Object o : (List<Object>) v.get("sign")) {
      Map<String, Object> c = (Map<String, Object>) o;
      assertEquals(c.get("sign"), Signatures.signLaunch((String) c.get("appSecret"), (String) c.get("appKey"),
          (String) c.get("thirdUserId"), (String) c.get("timestamp"), (String) c.get("nonce")));
    }
  }

  @Test
  void hostLaunchRoundTripsThroughTheAppSideParser() throws Exception {
    PluginHost host = new PluginHost("ak_1", "sk_1");
    PluginHost.Profile p = new PluginHost.Profile();
    p.gender = "female";
    p.height = 165;
    p.birthDate = "1990-01-02";
    PluginLaunch l = host.launch("user 1", p, "BODY_COMPOSITION_ANALYSIS", "BCA");
    PluginLaunch back = PluginLaunch.fromHostResponse(PluginHost.hostResponse(l));
    assertEquals(l.toUrl(true), back.toUrl(true));
    assertEquals(Signatures.signLaunch("sk_1", "ak_1", "user 1", l.getTimestamp(), l.getNonce()), back.getSign());
    assertEquals(165, host.decryptProfile("user 1", back.getUserProfile()).height);
  }
}
