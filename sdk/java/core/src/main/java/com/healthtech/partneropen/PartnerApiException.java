package com.healthtech.partneropen;

import com.healthtech.partneropen.json.Json;
import com.healthtech.partneropen.json.JsonException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The one error type of the SDK: a non-2xx answer of the platform, with everything support needs to find it (HTTP
 * status, the spec's string code, message, per-field validation errors and the X-Request-Id), so callers branch on
 * {@link #getCode()} instead of parsing messages.
 */
public class PartnerApiException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final String code;
  private final Map<String, List<String>> fieldErrors;
  private final String requestId;
  private final Long retryAfterSeconds;
  private final String body;

  /** Creates the exception from its parts; {@link #fromResponse} is the usual way. */
  public PartnerApiException(int status, String code, String message, Map<String, List<String>> fieldErrors,
      String requestId, Long retryAfterSeconds, String body) {
    super(describe(status, code, message, requestId));
    this.status = status;
    this.code = code;
    this.fieldErrors = fieldErrors == null ? Collections.<String, List<String>>emptyMap()
        : Collections.unmodifiableMap(new LinkedHashMap<String, List<String>>(fieldErrors));
    this.requestId = requestId;
    this.retryAfterSeconds = retryAfterSeconds;
    this.body = body;
  }

  private static String describe(int status, String code, String message, String requestId) {
    StringBuilder sb = new StringBuilder("HTTP ").append(status);
    if (code != null) {
      sb.append(' ').append(code);
    }
    if (message != null && !message.isEmpty()) {
      sb.append(": ").append(message);
    }
    if (requestId != null) {
      sb.append(" (request id ").append(requestId).append(')');
    }
    return sb.toString();
  }

  /**
   * Builds the exception from an error response: the common envelope ({@code code}, {@code message},
   * {@code errors}), the report pull's codeless envelope, or an OAuth error body ({@code error},
   * {@code error_description}); a body that is not JSON keeps its text as the message.
   */
  public static PartnerApiException fromResponse(int status, byte[] body, String requestId, Long retryAfterSeconds) {
    String text = body == null ? "" : new String(body, StandardCharsets.UTF_8);
    String code = null;
    String message = null;
    Map<String, List<String>> fields = null;
    try {
      Object parsed = text.isEmpty() ? null : Json.parse(text);
      if (parsed instanceof Map) {
        Map<?, ?> m = (Map<?, ?>) parsed;
        if (m.get("code") instanceof String) {
          code = (String) m.get("code");
        } else if (m.get("error") instanceof String) {
          code = (String) m.get("error");
        }
        if (m.get("message") instanceof String) {
          message = (String) m.get("message");
        } else if (m.get("error_description") instanceof String) {
          message = (String) m.get("error_description");
        }
        if (m.get("errors") instanceof Map) {
          fields = new LinkedHashMap<String, List<String>>();
          for (Map.Entry<?, ?> e : ((Map<?, ?>) m.get("errors")).entrySet()) {
            List<String> msgs = new ArrayList<String>();
            if (e.getValue() instanceof List) {
              for (Object o : (List<?>) e.getValue()) {
                msgs.add(String.valueOf(o));
              }
            } else if (e.getValue() != null) {
              msgs.add(String.valueOf(e.getValue()));
            }
            fields.put(String.valueOf(e.getKey()), Collections.unmodifiableList(msgs));
          }
        }
      } else if (!text.isEmpty()) {
        message = text;
      }
    } catch (JsonException e) {
      message = text.length() > 500 ? text.substring(0, 500) : text;
    }
    return new PartnerApiException(status, code, message, fields, requestId, retryAfterSeconds, text);
  }

  /** The HTTP status (401, 404, 422, 429, ...). */
  public int getStatus() {
    return status;
  }

  /** The spec's error code (USER_NOT_FOUND, VALIDATION_ERROR, HTTP_401, ...), or null where the platform sends none. */
  public String getCode() {
    return code;
  }

  /** The platform's human-readable message (not for branching; use the code). */
  public String getErrorMessage() {
    String m = getMessage();
    int i = m.indexOf(": ");
    return i < 0 ? null : m.substring(i + 2).replaceAll(" \\(request id [^)]*\\)$", "");
  }

  /** Field path (such as {@code user.phone}) to its messages; empty unless the code is VALIDATION_ERROR. */
  public Map<String, List<String>> getFieldErrors() {
    return fieldErrors;
  }

  /** The X-Request-Id of the failed request: quote it to support. */
  public String getRequestId() {
    return requestId;
  }

  /** The Retry-After seconds the platform asked for (429, 503, 409 IDEMPOTENCY_KEY_IN_PROGRESS), or null. */
  public Long getRetryAfterSeconds() {
    return retryAfterSeconds;
  }

  /** The raw response body text, for logging. */
  public String getBody() {
    return body;
  }
}
