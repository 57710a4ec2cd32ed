package com.healthtech.partneropen.server;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The platform's signature rules (spec, Authentication), all lower-case hex. They need the app secret, so they
 * belong on the partner's server only, never in app code.
 */
public final class Signatures {
  private Signatures() {}

  /** Scheme M: MD5 of app_key + timestamp + app_secret + body bytes, no separators (empty body for GET/DELETE). */
  public static String signM(String appKey, long timestamp, String appSecret, byte[] body) {
    MessageDigest md5 = digest("MD5");
    md5.update(appKey.getBytes(StandardCharsets.UTF_8));
    md5.update(Long.toString(timestamp).getBytes(StandardCharsets.UTF_8));
    md5.update(appSecret.getBytes(StandardCharsets.UTF_8));
    if (body != null) {
      md5.update(body);
    }
    return hex(md5.digest());
  }

  /** The scheme H string to sign: METHOD LF URI LF timestamp LF nonce LF hex(SHA-256(body)). */
  public static String schemeHSignString(String method, String uri, long timestamp, String nonce, byte[] body) {
    return method.toUpperCase(java.util.Locale.ROOT) + "\n" + uri + "\n" + timestamp + "\n"
        + (nonce == null ? "" : nonce) + "\n" + sha256Hex(body == null ? new byte[0] : body);
  }

  /** Scheme H: HMAC-SHA-256 keyed with the app secret over {@link #schemeHSignString}; uri includes the query. */
  public static String signH(String method, String uri, long timestamp, String nonce, byte[] body, String appSecret) {
    return hex(hmacSha256(appSecret.getBytes(StandardCharsets.UTF_8),
        schemeHSignString(method, uri, timestamp, nonce, body).getBytes(StandardCharsets.UTF_8)));
  }

  /** Plugin launch: HMAC-SHA-256 keyed with the app secret over appKey|thirdUserId|timestamp|nonce. */
  public static String signLaunch(String appSecret, String appKey, String thirdUserId, String timestamp,
      String nonce) {
    return hex(hmacSha256(appSecret.getBytes(StandardCharsets.UTF_8),
        (appKey + "|" + thirdUserId + "|" + timestamp + "|" + nonce).getBytes(StandardCharsets.UTF_8)));
  }

  /** Webhook: HMAC-SHA-256 keyed with the webhook secret over timestamp + "." + the raw body bytes. */
  public static String signWebhook(String webhookSecret, long timestamp, byte[] body) {
    Mac mac = mac(webhookSecret.getBytes(StandardCharsets.UTF_8));
    mac.update((timestamp + ".").getBytes(StandardCharsets.UTF_8));
    mac.update(body);
    return hex(mac.doFinal());
  }

  static byte[] hmacSha256(byte[] key, byte[] data) {
    return mac(key).doFinal(data);
  }

  private static Mac mac(byte[] key) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      // A zero-length key is legal for HMAC but refused by SecretKeySpec; HMAC pads it to a block of zeros anyway.
      mac.init(new SecretKeySpec(key.length == 0 ? new byte[1] : key, "HmacSHA256"));
      return mac;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 unavailable", e);
    }
  }

  static String sha256Hex(byte[] body) {
    return hex(digest("SHA-256").digest(body));
  }

  private static MessageDigest digest(String alg) {
    try {
      return MessageDigest.getInstance(alg);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(alg + " unavailable", e);
    }
  }

  private static final char[] HEX = "0123456789abcdef".toCharArray();

  static String hex(byte[] b) {
    char[] out = new char[b.length * 2];
    for (int i = 0; i < b.length; i++) {
      out[2 * i] = HEX[(b[i] >> 4) & 0xf];
      out[2 * i + 1] = HEX[b[i] & 0xf];
    }
    return new String(out);
  }

  /** Decodes lower- or upper-case hex; null when not hex, so verifiers fail closed. */
  static byte[] unhex(String s) {
    if (s == null || s.length() % 2 != 0) {
      return null;
    }
    byte[] out = new byte[s.length() / 2];
    for (int i = 0; i < out.length; i++) {
      int hi = Character.digit(s.charAt(2 * i), 16);
      int lo = Character.digit(s.charAt(2 * i + 1), 16);
      if (hi < 0 || lo < 0) {
        return null;
      }
      out[i] = (byte) ((hi << 4) | lo);
    }
    return out;
  }
}
