package com.healthtech.partneropen.plugin;

import com.healthtech.partneropen.json.Json;
import com.healthtech.partneropen.json.JsonException;
import com.healthtech.partneropen.json.JsonValues;
import java.io.UnsupportedEncodingException;
import java.net.URLEncoder;
import java.util.Map;

/**
 * The signed launch parameters a host server hands its front end, and the plugin URL built from them. This class
 * holds no secret: the host SERVER signs and encrypts (server artifact, PluginHost); the app only turns the host's
 * response into {@code plugin://platform-measure/bind?...}, which is why it lives in the Android-safe core.
 */
public final class PluginLaunch {
  /** The plugin page every launch opens. */
  public static final String URL_PREFIX = "plugin://platform-measure/bind?";

  private final String appKey;
  private final String thirdUserId;
  private final String userProfile;
  private final String timestamp;
  private final String nonce;
  private final String sign;
  private final String deviceKey;
  private final String measureMode;

  /** Creates launch parameters; every value is required by the plugin. */
  public PluginLaunch(String appKey, String thirdUserId, String userProfile, String timestamp, String nonce,
      String sign, String deviceKey, String measureMode) {
    this.appKey = require(appKey, "appKey");
    this.thirdUserId = require(thirdUserId, "thirdUserId");
    this.userProfile = require(userProfile, "userProfile");
    this.timestamp = require(timestamp, "timestamp");
    this.nonce = require(nonce, "nonce");
    this.sign = require(sign, "sign");
    this.deviceKey = require(deviceKey, "deviceKey");
    this.measureMode = require(measureMode, "measureMode");
    if (!timestamp.matches("[0-9]{10}")) {
      throw new IllegalArgumentException("timestamp must be 10-digit Unix seconds, got " + timestamp);
    }
  }

  private static String require(String v, String name) {
    if (v == null || v.isEmpty()) {
      throw new IllegalArgumentException(name + " is required");
    }
    return v;
  }

  /**
   * Parses the host server's response ({@code {"code":0,"data":{appKey, thirdUserId, userProfile, timestamp, nonce,
   * sign, deviceKey, measureMode}}}); a non-zero code or a missing parameter is an IllegalArgumentException.
   */
  public static PluginLaunch fromHostResponse(String json) {
    Map<String, Object> m;
    try {
      m = JsonValues.asObject(Json.parse(json), "response");
    } catch (JsonException e) {
      throw new IllegalArgumentException("host response is not a JSON object: " + e.getMessage(), e);
    }
    if (m == null) {
      throw new IllegalArgumentException("host response is null");
    }
    Object code = m.get("code");
    if (!(code instanceof Long) || ((Long) code) != 0L) {
      throw new IllegalArgumentException("host response code is " + code + ", not 0");
    }
    Map<String, Object> d = JsonValues.asObject(m.get("data"), "data");
    if (d == null) {
      throw new IllegalArgumentException("host response has no data");
    }
    return new PluginLaunch(str(d, "appKey"), str(d, "thirdUserId"), str(d, "userProfile"), str(d, "timestamp"),
        str(d, "nonce"), str(d, "sign"), str(d, "deviceKey"), str(d, "measureMode"));
  }

  private static String str(Map<String, Object> d, String k) {
    Object v = d.get(k);
    if (v instanceof Long && k.equals("timestamp")) {
      return v.toString();
    }
    try {
      return JsonValues.asString(v, k);
    } catch (JsonException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
  }

  /** The launch URL for production (no env parameter). */
  public String toUrl() {
    return toUrl(false);
  }

  /**
   * The launch URL: parameters in the platform's order, values percent-encoded (space as %20), with
   * {@code &env=sandbox} only when {@code sandbox} (the spec requires it removed in production).
   */
  public String toUrl(boolean sandbox) {
    StringBuilder b = new StringBuilder(URL_PREFIX);
    String[][] kv = {
      {"appKey", appKey}, {"thirdUserId", thirdUserId}, {"userProfile", userProfile}, {"timestamp", timestamp},
      {"nonce", nonce}, {"sign", sign}, {"deviceKey", deviceKey}, {"measureMode", measureMode},
    };
    for (int i = 0; i < kv.length; i++) {
      if (i > 0) {
        b.append('&');
      }
      b.append(kv[i][0]).append('=').append(escape(kv[i][1]));
    }
    if (sandbox) {
      b.append("&env=sandbox");
    }
    return b.toString();
  }

  /** Query escaping as the platform's Go server does it (url.QueryEscape with space as %20). */
  static String escape(String s) {
    try {
      return URLEncoder.encode(s, "UTF-8").replace("+", "%20").replace("*", "%2A").replace("%7E", "~");
    } catch (UnsupportedEncodingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The app key (public). */
  public String getAppKey() {
    return appKey;
  }

  /** The host's user id passed to the plugin. */
  public String getThirdUserId() {
    return thirdUserId;
  }

  /** base64(IV || AES-GCM ciphertext) of the profile, opaque to the app. */
  public String getUserProfile() {
    return userProfile;
  }

  /** 10-digit Unix seconds the signature was made at. */
  public String getTimestamp() {
    return timestamp;
  }

  /** The signature's nonce. */
  public String getNonce() {
    return nonce;
  }

  /** Hex HMAC-SHA-256 over appKey|thirdUserId|timestamp|nonce, made by the host server. */
  public String getSign() {
    return sign;
  }

  /** The device (see DeviceKey). */
  public String getDeviceKey() {
    return deviceKey;
  }

  /** The measure mode (see MeasureMode). */
  public String getMeasureMode() {
    return measureMode;
  }
}
