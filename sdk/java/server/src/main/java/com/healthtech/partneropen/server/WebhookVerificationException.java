package com.healthtech.partneropen.server;

/**
 * A webhook request that must be refused: bad or missing signature (answer 401) or a timestamp outside the
 * tolerance (answer 400 or 401). {@link #getReason()} says which, for the receiver's logs and status code.
 */
public class WebhookVerificationException extends Exception {
  private static final long serialVersionUID = 1L;

  /** Why verification failed. */
  public enum Reason {
    /** A header was missing or not in the expected form. */
    MALFORMED,
    /** The timestamp is further than the tolerance from now (a replay or a badly skewed clock). */
    STALE_TIMESTAMP,
    /** The signature does not match the body under the secret. */
    SIGNATURE_MISMATCH
  }

  private final Reason reason;

  /** Creates the exception with its reason and a message for logs (never containing the secret). */
  public WebhookVerificationException(Reason reason, String message) {
    super(message);
    this.reason = reason;
  }

  /** Why verification failed. */
  public Reason getReason() {
    return reason;
  }
}
