package com.healthtech.partneropen.server;

/**
 * When and how long the client waits before repeating a request that got 429 or 503 (or a connection failure, or
 * 409 IDEMPOTENCY_KEY_IN_PROGRESS). Only requests that are safe to repeat are retried: reads, and writes that carry
 * an Idempotency-Key (the platform then answers a repeat with the first answer instead of acting twice).
 */
public final class RetryPolicy {
  /** Sleeps between attempts; replaceable so tests observe the waits without waiting. */
  public interface Sleeper {
    /** Blocks for the given milliseconds. */
    void sleep(long millis) throws InterruptedException;
  }

  private final int maxAttempts;
  private final long baseDelayMillis;
  private final long maxDelayMillis;
  private final Sleeper sleeper;

  /**
   * @param maxAttempts total attempts including the first (1 disables retries)
   * @param baseDelayMillis first backoff delay, doubled per attempt
   * @param maxDelayMillis cap on any single wait, Retry-After included
   * @param sleeper how to wait
   */
  public RetryPolicy(int maxAttempts, long baseDelayMillis, long maxDelayMillis, Sleeper sleeper) {
    if (maxAttempts < 1 || baseDelayMillis < 0 || maxDelayMillis < baseDelayMillis || sleeper == null) {
      throw new IllegalArgumentException("invalid retry policy");
    }
    this.maxAttempts = maxAttempts;
    this.baseDelayMillis = baseDelayMillis;
    this.maxDelayMillis = maxDelayMillis;
    this.sleeper = sleeper;
  }

  /** The default: 4 attempts, 500 ms doubling with jitter, at most 30 s per wait, Thread.sleep. */
  public static RetryPolicy defaults() {
    return new RetryPolicy(4, 500, 30_000, Thread::sleep);
  }

  /** No retries at all. */
  public static RetryPolicy none() {
    return new RetryPolicy(1, 0, 0, Thread::sleep);
  }

  /** Total attempts including the first. */
  public int getMaxAttempts() {
    return maxAttempts;
  }

  /**
   * The wait before attempt {@code attempt + 1} (attempt counts from 1): the server's Retry-After when given
   * (never waiting less than it asks), else exponential backoff with full jitter; both capped.
   */
  long delayMillis(int attempt, Long retryAfterSeconds) {
    if (retryAfterSeconds != null && retryAfterSeconds >= 0) {
      return Math.min(retryAfterSeconds * 1000L, maxDelayMillis);
    }
    long exp = baseDelayMillis << Math.min(attempt - 1, 20);
    long capped = Math.min(exp, maxDelayMillis);
    return capped / 2 + (long) (Math.random() * (capped / 2 + 1));
  }

  void sleep(long millis) throws InterruptedException {
    if (millis > 0) {
      sleeper.sleep(millis);
    }
  }
}
