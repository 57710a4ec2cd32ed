package com.healthtech.partneropen.plugin;

import com.healthtech.partneropen.json.Json;
import com.healthtech.partneropen.json.JsonException;
import com.healthtech.partneropen.json.JsonValues;
import java.util.Map;

/**
 * The plugin's result as stored under the local storage key {@value #STORAGE_KEY}: status success (with measureId,
 * equal to measurement_no in plugin.report.ready), cancel, or anything else meaning failure (with errorCode). The
 * host reads it once and removes it.
 */
public final class MeasureResult {
  /** The local storage key the plugin writes its result under. */
  public static final String STORAGE_KEY = "platform_measure_result";

  /** What the measurement ended with. */
  public enum Outcome {
    /** Measured; {@link #getMeasureId()} is set. */
    SUCCESS,
    /** The user cancelled. */
    CANCEL,
    /** Any other status: failed, see {@link #getErrorCode()}. */
    FAILURE
  }

  private final Outcome outcome;
  private final String status;
  private final String measureId;
  private final String errorCode;

  private MeasureResult(Outcome outcome, String status, String measureId, String errorCode) {
    this.outcome = outcome;
    this.status = status;
    this.measureId = measureId;
    this.errorCode = errorCode;
  }

  /** Parses the stored JSON object; a success without measureId is refused, since the host could not match it. */
  public static MeasureResult parse(String json) {
    Map<String, Object> m;
    try {
      m = JsonValues.asObject(Json.parse(json), STORAGE_KEY);
    } catch (JsonException e) {
      throw new IllegalArgumentException(STORAGE_KEY + " is not a JSON object: " + e.getMessage(), e);
    }
    if (m == null || !(m.get("status") instanceof String)) {
      throw new IllegalArgumentException(STORAGE_KEY + " has no status");
    }
    String status = (String) m.get("status");
    String measureId = m.get("measureId") == null ? null : String.valueOf(m.get("measureId"));
    String errorCode = m.get("errorCode") == null ? null : String.valueOf(m.get("errorCode"));
    Outcome o = status.equals("success") ? Outcome.SUCCESS : status.equals("cancel") ? Outcome.CANCEL : Outcome.FAILURE;
    if (o == Outcome.SUCCESS && (measureId == null || measureId.isEmpty())) {
      throw new IllegalArgumentException(STORAGE_KEY + ": status success without measureId");
    }
    return new MeasureResult(o, status, measureId, errorCode);
  }

  /** Success, cancel or failure. */
  public Outcome getOutcome() {
    return outcome;
  }

  /** The status string as the plugin wrote it. */
  public String getStatus() {
    return status;
  }

  /** On success, the measurement number (the webhook's measurement_no); else null. */
  public String getMeasureId() {
    return measureId;
  }

  /** On failure, the plugin's error code; else null. */
  public String getErrorCode() {
    return errorCode;
  }
}
