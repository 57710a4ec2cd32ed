package com.healthtech.partneropen.server;

import com.healthtech.partneropen.webhook.WebhookEvent;
import java.security.MessageDigest;

/**
 * Verifies incoming webhooks (spec, Webhook signature): HMAC-SHA-256 with the webhook secret over
 * {@code X-Webhook-Timestamp + "." + raw body}, compared in constant time, timestamp within 300 s of now. Pass the
 * body bytes exactly as received, before any JSON parsing: re-serialised JSON does not verify.
 */
public final class Webhooks {
  /** The spec's tolerance between X-Webhook-Timestamp and the receiver's clock. */
  public static final long DEFAULT_TOLERANCE_SECONDS = 300;

  private Webhooks() {}

  /** Verifies with the default 300 s tolerance against the system clock. */
  public static void verify(String secret, String timestamp, String signature, byte[] body)
      throws WebhookVerificationException {
    verify(secret, timestamp, signature, body, DEFAULT_TOLERANCE_SECONDS, System.currentTimeMillis() / 1000L);
  }

  /**
   * Verifies a webhook; returns normally only when the signature matches and |now - timestamp| &lt;= tolerance.
   *
   * @param secret the app's active webhook secret
   * @param timestamp the X-Webhook-Timestamp header (Unix seconds)
   * @param signature the X-Webhook-Signature header (hex)
   * @param body the raw request body bytes
   * @param toleranceSeconds allowed clock distance, 300 in the spec
   * @param nowEpochSeconds the receiver's current time in Unix seconds
   */
  public static void verify(String secret, String timestamp, String signature, byte[] body, long toleranceSeconds,
      long nowEpochSeconds) throws WebhookVerificationException {
    if (secret == null || secret.isEmpty()) {
      throw new IllegalArgumentException("webhook secret is required");
    }
    if (body == null) {
      throw new WebhookVerificationException(WebhookVerificationException.Reason.MALFORMED, "no body");
    }
    long ts;
    try {
      if (timestamp == null || !timestamp.trim().matches("[0-9]{1,12}")) {
        throw new NumberFormatException();
      }
      ts = Long.parseLong(timestamp.trim());
    } catch (NumberFormatException e) {
      throw new WebhookVerificationException(WebhookVerificationException.Reason.MALFORMED,
          "X-Webhook-Timestamp is not Unix seconds");
    }
    byte[] got = Signatures.unhex(signature == null ? null : signature.trim());
    if (got == null || got.length != 32) {
      throw new WebhookVerificationException(WebhookVerificationException.Reason.MALFORMED,
          "X-Webhook-Signature is not a hex HMAC-SHA-256");
    }
    if (Math.abs(nowEpochSeconds - ts) > toleranceSeconds) {
      throw new WebhookVerificationException(WebhookVerificationException.Reason.STALE_TIMESTAMP,
          "X-Webhook-Timestamp is " + (nowEpochSeconds - ts) + " s from now, beyond " + toleranceSeconds + " s");
    }
    byte[] want = Signatures.unhex(Signatures.signWebhook(secret, ts, body));
    if (!MessageDigest.isEqual(want, got)) {
      throw new WebhookVerificationException(WebhookVerificationException.Reason.SIGNATURE_MISMATCH,
          "X-Webhook-Signature does not match");
    }
  }

  /** Verifies (default tolerance, system clock) and then parses the same bytes into the typed event. */
  public static WebhookEvent constructEvent(String secret, String timestamp, String signature, byte[] body)
      throws WebhookVerificationException {
    verify(secret, timestamp, signature, body);
    return WebhookEvent.parse(body);
  }
}
