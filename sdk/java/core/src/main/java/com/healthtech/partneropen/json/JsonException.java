package com.healthtech.partneropen.json;

/** Thrown when bytes are not JSON or a JSON value does not have the type the platform's contract promises. */
public class JsonException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with a message naming the offending offset or field. */
  public JsonException(String message) {
    super(message);
  }

  /** Creates the exception wrapping the cause, for callers that convert parse failures. */
  public JsonException(String message, Throwable cause) {
    super(message, cause);
  }
}
