package com.healthtech.partneropen.server;

import com.healthtech.partneropen.json.Json;
import com.healthtech.partneropen.json.JsonValues;
import com.healthtech.partneropen.plugin.PluginLaunch;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * The host server's side of the measurement plugin: signs launch parameters and encrypts the user profile with a
 * key derived from the app secret, exactly as the platform's plugin package checks them (HKDF-SHA-256 with salt
 * "partner-open-platform/plugin" and info "userProfile v1", AES-256-GCM, 12-byte IV, AAD appKey|thirdUserId,
 * base64(IV || ciphertext || tag)). Its output is the response body the host's own endpoint returns to its app,
 * which turns it into a URL with the core artifact's PluginLaunch.
 */
public final class PluginHost {
  private static final String KDF_SALT = "partner-open-platform/plugin";
  private static final String KDF_INFO = "userProfile v1";
  private static final int IV_SIZE = 12;
  private static final int TAG_BITS = 128;

  private final String appKey;
  private final String appSecret;
  private final SecureRandom random = new SecureRandom();

  /** A helper for one app; keep it on the server, since it holds the app secret. */
  public PluginHost(String appKey, String appSecret) {
    if (appKey == null || appKey.isEmpty() || appKey.contains("|")) {
      throw new IllegalArgumentException("appKey is required and must not contain '|'");
    }
    if (appSecret == null || appSecret.isEmpty()) {
      throw new IllegalArgumentException("appSecret is required");
    }
    this.appKey = appKey;
    this.appSecret = appSecret;
  }

  /** The user profile the plugin receives encrypted; every member is optional (height, gender, birth_date for BCA). */
  public static final class Profile {
    /** Mainland mobile number; lets the platform bind platform_user_id. */
    public String phone;
    /** male, female or unknown. */
    public String gender;
    /** Y-m-d. */
    public String birthDate;
    /** Centimetres. */
    public Integer height;
    /** Kilograms times 100. */
    public Integer weight;
    /** Display name. */
    public String name;
    /** Echoed back as metadata in plugin.report.ready. */
    public String metadata;

    /** The plaintext JSON, members in the platform's order, empty ones omitted (as the platform writes it). */
    public byte[] toJsonBytes() {
      Map<String, Object> m = new LinkedHashMap<String, Object>();
      putIf(m, "phone", phone);
      putIf(m, "gender", gender);
      putIf(m, "birth_date", birthDate);
      if (height != null && height != 0) {
        m.put("height", height);
      }
      if (weight != null && weight != 0) {
        m.put("weight", weight);
      }
      putIf(m, "name", name);
      putIf(m, "metadata", metadata);
      return Json.writeBytes(m);
    }

    private static void putIf(Map<String, Object> m, String k, String v) {
      if (v != null && !v.isEmpty()) {
        m.put(k, v);
      }
    }

    /** Parses a decrypted profile. */
    public static Profile fromJson(byte[] json) {
      Map<String, Object> m = JsonValues.asObject(Json.parse(json), "userProfile");
      Profile p = new Profile();
      p.phone = JsonValues.asString(m.get("phone"), "phone");
      p.gender = JsonValues.asString(m.get("gender"), "gender");
      p.birthDate = JsonValues.asString(m.get("birth_date"), "birth_date");
      Long h = JsonValues.asLong(m.get("height"), "height");
      Long w = JsonValues.asLong(m.get("weight"), "weight");
      p.height = h == null ? null : h.intValue();
      p.weight = w == null ? null : w.intValue();
      p.name = JsonValues.asString(m.get("name"), "name");
      p.metadata = JsonValues.asString(m.get("metadata"), "metadata");
      return p;
    }
  }

  /** Signs and encrypts launch parameters at the current time with a fresh nonce and IV. */
  public PluginLaunch launch(String thirdUserId, Profile profile, String deviceKey, String measureMode) {
    byte[] n = new byte[16];
    random.nextBytes(n);
    byte[] iv = new byte[IV_SIZE];
    random.nextBytes(iv);
    return launch(thirdUserId, profile, deviceKey, measureMode, System.currentTimeMillis() / 1000L,
        Signatures.hex(n), iv);
  }

  /** Deterministic variant (fixed time, nonce and IV) for tests; production code uses the other overload. */
  public PluginLaunch launch(String thirdUserId, Profile profile, String deviceKey, String measureMode,
      long nowEpochSeconds, String nonce, byte[] iv) {
    if (thirdUserId == null || thirdUserId.isEmpty()) {
      throw new IllegalArgumentException("thirdUserId is required");
    }
    String ts = Long.toString(nowEpochSeconds);
    String userProfile = encryptProfile(thirdUserId, profile == null ? new Profile() : profile, iv);
    return new PluginLaunch(appKey, thirdUserId, userProfile, ts, nonce,
        Signatures.signLaunch(appSecret, appKey, thirdUserId, ts, nonce), deviceKey, measureMode);
  }

  /** The body the host's endpoint returns to its front end: {"code":0,"data":{...launch parameters}}. */
  public static String hostResponse(PluginLaunch l) {
    Map<String, Object> d = new LinkedHashMap<String, Object>();
    d.put("appKey", l.getAppKey());
    d.put("thirdUserId", l.getThirdUserId());
    d.put("userProfile", l.getUserProfile());
    d.put("timestamp", l.getTimestamp());
    d.put("nonce", l.getNonce());
    d.put("sign", l.getSign());
    d.put("deviceKey", l.getDeviceKey());
    d.put("measureMode", l.getMeasureMode());
    Map<String, Object> m = new LinkedHashMap<String, Object>();
    m.put("code", 0);
    m.put("data", d);
    return Json.write(m);
  }

  /** Encrypts a profile for one user with the given 12-byte IV; base64(IV || ciphertext || tag). */
  public String encryptProfile(String thirdUserId, Profile profile, byte[] iv) {
    if (iv == null || iv.length != IV_SIZE) {
      throw new IllegalArgumentException("IV must be " + IV_SIZE + " bytes");
    }
    try {
      Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
      c.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(profileKey(appSecret), "AES"), new GCMParameterSpec(TAG_BITS, iv));
      c.updateAAD((appKey + "|" + thirdUserId).getBytes(StandardCharsets.UTF_8));
      byte[] sealed = c.doFinal(profile.toJsonBytes());
      byte[] out = new byte[iv.length + sealed.length];
      System.arraycopy(iv, 0, out, 0, iv.length);
      System.arraycopy(sealed, 0, out, iv.length, sealed.length);
      return Base64.getEncoder().encodeToString(out);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES-GCM unavailable", e);
    }
  }

  /** Decrypts a userProfile made for this app and user; throws GeneralSecurityException when it does not open. */
  public Profile decryptProfile(String thirdUserId, String userProfile) throws GeneralSecurityException {
    byte[] raw;
    try {
      raw = Base64.getDecoder().decode(userProfile);
    } catch (IllegalArgumentException e) {
      throw new GeneralSecurityException("userProfile is not base64", e);
    }
    if (raw.length < IV_SIZE + TAG_BITS / 8) {
      throw new GeneralSecurityException("userProfile too short");
    }
    Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
    c.init(Cipher.DECRYPT_MODE, new SecretKeySpec(profileKey(appSecret), "AES"),
        new GCMParameterSpec(TAG_BITS, raw, 0, IV_SIZE));
    c.updateAAD((appKey + "|" + thirdUserId).getBytes(StandardCharsets.UTF_8));
    return Profile.fromJson(c.doFinal(raw, IV_SIZE, raw.length - IV_SIZE));
  }

  /** HKDF-SHA-256 (RFC 5869) of the app secret, 32 bytes: the profile's AES-256 key. */
  static byte[] profileKey(String appSecret) {
    byte[] prk = Signatures.hmacSha256(KDF_SALT.getBytes(StandardCharsets.UTF_8),
        appSecret.getBytes(StandardCharsets.UTF_8));
    byte[] info = KDF_INFO.getBytes(StandardCharsets.UTF_8);
    byte[] t1in = new byte[info.length + 1];
    System.arraycopy(info, 0, t1in, 0, info.length);
    t1in[info.length] = 1;
    return Signatures.hmacSha256(prk, t1in); // one SHA-256 block is exactly the 32 bytes needed
  }
}
