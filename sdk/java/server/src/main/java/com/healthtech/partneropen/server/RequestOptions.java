package com.healthtech.partneropen.server;

/**
 * Per-call options: an explicit Idempotency-Key (to make a write safe to retry across process restarts, store it
 * with the intended write) and an X-Request-Id to correlate with the platform's logs.
 */
public final class RequestOptions {
  private String idempotencyKey;
  private String requestId;

  /** Empty options: the client generates an idempotency key per write when it is configured to. */
  public RequestOptions() {}

  /** Options carrying an idempotency key. */
  public static RequestOptions idempotencyKey(String key) {
    return new RequestOptions().setIdempotencyKey(key);
  }

  /** Sets the Idempotency-Key: 1 to 255 printable ASCII characters; reuse it only to retry the same write. */
  public RequestOptions setIdempotencyKey(String key) {
    this.idempotencyKey = key;
    return this;
  }

  /** Sets the X-Request-Id the platform echoes (letters, digits, '.', '_', '-'; up to 64). */
  public RequestOptions setRequestId(String id) {
    this.requestId = id;
    return this;
  }

  /** The idempotency key, or null. */
  public String getIdempotencyKey() {
    return idempotencyKey;
  }

  /** The request id, or null. */
  public String getRequestId() {
    return requestId;
  }
}
