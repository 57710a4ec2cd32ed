package com.healthtech.partneropen.json;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * Typed views of parsed JSON values, used by the generated models so that a value of the wrong type fails with the
 * field's name instead of a ClassCastException far from the wire.
 */
public final class JsonValues {
  private JsonValues() {}

  /** Converts one parsed JSON value into a typed value; the models' fromJson methods are converters. */
  public interface Converter<T> {
    /** Converts {@code json} (never null) into T, or throws {@link JsonException}. */
    T convert(Object json);
  }

  /** The value as a JSON object; null stays null. */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> asObject(Object v, String field) {
    if (v == null || v instanceof Map) {
      return (Map<String, Object>) v;
    }
    throw mismatch(field, "an object", v);
  }

  /** The value as a string; null stays null. */
  public static String asString(Object v, String field) {
    if (v == null || v instanceof String) {
      return (String) v;
    }
    throw mismatch(field, "a string", v);
  }

  /** The value as a 64-bit integer (the platform's integers and ids); null stays null, fractions are refused. */
  public static Long asLong(Object v, String field) {
    if (v == null || v instanceof Long) {
      return (Long) v;
    }
    if (v instanceof Integer || v instanceof Short || v instanceof Byte) {
      return Long.valueOf(((Number) v).longValue());
    }
    throw mismatch(field, "an integer", v);
  }

  /** The value as a double (the platform's non-integral numbers); null stays null. */
  public static Double asDouble(Object v, String field) {
    if (v == null) {
      return null;
    }
    if (v instanceof Number) {
      return Double.valueOf(((Number) v).doubleValue());
    }
    throw mismatch(field, "a number", v);
  }

  /** The value as a boolean; null stays null. */
  public static Boolean asBoolean(Object v, String field) {
    if (v == null || v instanceof Boolean) {
      return (Boolean) v;
    }
    throw mismatch(field, "a boolean", v);
  }

  /** The value as a list of T, each element converted; null stays null, null elements stay null. */
  public static <T> List<T> asList(Object v, String field, Converter<T> c) {
    if (v == null) {
      return null;
    }
    if (!(v instanceof List)) {
      throw mismatch(field, "an array", v);
    }
    List<?> in = (List<?>) v;
    List<T> out = new ArrayList<T>(in.size());
    for (int i = 0; i < in.size(); i++) {
      Object e = in.get(i);
      try {
        out.add(e == null ? null : c.convert(e));
      } catch (JsonException ex) {
        throw new JsonException(field + "[" + i + "]: " + ex.getMessage(), ex);
      }
    }
    return Collections.unmodifiableList(out);
  }

  /** Converts a nested value with the field name added to any error. */
  public static <T> T as(Object v, String field, Converter<T> c) {
    if (v == null) {
      return null;
    }
    try {
      return c.convert(v);
    } catch (JsonException ex) {
      throw new JsonException(field + "." + ex.getMessage(), ex);
    }
  }

  private static JsonException mismatch(String field, String want, Object got) {
    return new JsonException(field + ": expected " + want + ", got " + kind(got));
  }

  private static String kind(Object v) {
    if (v instanceof Map) {
      return "an object";
    }
    if (v instanceof List) {
      return "an array";
    }
    if (v instanceof String) {
      return "a string";
    }
    if (v instanceof Boolean) {
      return "a boolean";
    }
    if (v instanceof Number) {
      return "the number " + v;
    }
    return v.getClass().getSimpleName();
  }
}
