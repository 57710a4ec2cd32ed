package com.healthtech.partneropen.json;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Minimal JSON reader and writer, so the SDK has no runtime dependency and behaves the same on the JVM and on
 * Android (whose built-in org.json is absent from the JDK, and whose org.json cannot tell absent from null).
 *
 * <p>Values map to Java as: object to {@code LinkedHashMap<String,Object>} (member order kept), array to
 * {@code ArrayList<Object>}, string to {@link String}, integral number to {@link Long} (or {@link BigInteger}
 * beyond 64 bits), other numbers to {@link Double}, true/false to {@link Boolean}, null to {@code null}.
 */
public final class Json {
  private Json() {}

  /** Parses UTF-8 JSON bytes, as received on the wire, into the Java value described on the class. */
  public static Object parse(byte[] utf8) {
    return parse(new String(utf8, StandardCharsets.UTF_8));
  }

  /** Parses a JSON text into the Java value described on the class; trailing garbage is an error. */
  public static Object parse(String text) {
    Reader r = new Reader(text);
    r.skipWs();
    Object v = r.value(0);
    r.skipWs();
    if (r.pos != text.length()) {
      throw r.error("unexpected trailing characters");
    }
    return v;
  }

  /** Serialises a value (maps, lists, strings, numbers, booleans, null, {@link JsonModel}s) to compact JSON. */
  public static String write(Object value) {
    StringBuilder sb = new StringBuilder();
    write(sb, value);
    return sb.toString();
  }

  /** Serialises a value to compact JSON as UTF-8 bytes, the exact bytes the SDK signs and sends. */
  public static byte[] writeBytes(Object value) {
    return write(value).getBytes(StandardCharsets.UTF_8);
  }

  private static void write(StringBuilder sb, Object v) {
    if (v == null) {
      sb.append("null");
    } else if (v instanceof JsonModel) {
      write(sb, ((JsonModel) v).toJson());
    } else if (v instanceof String) {
      quote(sb, (String) v);
    } else if (v instanceof Boolean) {
      sb.append(v.toString());
    } else if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      if (Double.isNaN(d) || Double.isInfinite(d)) {
        throw new JsonException("JSON cannot represent " + d);
      }
      if (d == Math.rint(d) && Math.abs(d) < 1e15) {
        sb.append((long) d);
      } else {
        sb.append(BigDecimal.valueOf(d).toString());
      }
    } else if (v instanceof Number) {
      sb.append(v.toString());
    } else if (v instanceof Map) {
      sb.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        quote(sb, String.valueOf(e.getKey()));
        sb.append(':');
        write(sb, e.getValue());
      }
      sb.append('}');
    } else if (v instanceof Collection) {
      sb.append('[');
      boolean first = true;
      for (Object o : (Collection<?>) v) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        write(sb, o);
      }
      sb.append(']');
    } else {
      throw new JsonException("cannot write " + v.getClass().getName() + " as JSON");
    }
  }

  private static void quote(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"':
          sb.append("\\\"");
          break;
        case '\\':
          sb.append("\\\\");
          break;
        case '\n':
          sb.append("\\n");
          break;
        case '\r':
          sb.append("\\r");
          break;
        case '\t':
          sb.append("\\t");
          break;
        default:
          if (c < 0x20 || c == 0x2028 || c == 0x2029) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
      }
    }
    sb.append('"');
  }

  private static final int MAX_DEPTH = 512;

  private static final class Reader {
    final String s;
    int pos;

    Reader(String s) {
      this.s = s;
    }

    JsonException error(String msg) {
      return new JsonException("invalid JSON at offset " + pos + ": " + msg);
    }

    void skipWs() {
      while (pos < s.length()) {
        char c = s.charAt(pos);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
          pos++;
        } else {
          break;
        }
      }
    }

    Object value(int depth) {
      if (depth > MAX_DEPTH) {
        throw error("nesting deeper than " + MAX_DEPTH);
      }
      if (pos >= s.length()) {
        throw error("unexpected end of input");
      }
      char c = s.charAt(pos);
      switch (c) {
        case '{':
          return object(depth);
        case '[':
          return array(depth);
        case '"':
          return string();
        case 't':
          literal("true");
          return Boolean.TRUE;
        case 'f':
          literal("false");
          return Boolean.FALSE;
        case 'n':
          literal("null");
          return null;
        default:
          if (c == '-' || (c >= '0' && c <= '9')) {
            return number();
          }
          throw error("unexpected character '" + c + "'");
      }
    }

    void literal(String lit) {
      if (!s.startsWith(lit, pos)) {
        throw error("expected " + lit);
      }
      pos += lit.length();
    }

    Map<String, Object> object(int depth) {
      pos++;
      Map<String, Object> m = new LinkedHashMap<String, Object>();
      skipWs();
      if (pos < s.length() && s.charAt(pos) == '}') {
        pos++;
        return m;
      }
      while (true) {
        skipWs();
        if (pos >= s.length() || s.charAt(pos) != '"') {
          throw error("expected a member name");
        }
        String k = string();
        skipWs();
        if (pos >= s.length() || s.charAt(pos) != ':') {
          throw error("expected ':'");
        }
        pos++;
        skipWs();
        m.put(k, value(depth + 1));
        skipWs();
        if (pos >= s.length()) {
          throw error("unterminated object");
        }
        char c = s.charAt(pos++);
        if (c == '}') {
          return m;
        }
        if (c != ',') {
          pos--;
          throw error("expected ',' or '}'");
        }
      }
    }

    List<Object> array(int depth) {
      pos++;
      List<Object> l = new ArrayList<Object>();
      skipWs();
      if (pos < s.length() && s.charAt(pos) == ']') {
        pos++;
        return l;
      }
      while (true) {
        skipWs();
        l.add(value(depth + 1));
        skipWs();
        if (pos >= s.length()) {
          throw error("unterminated array");
        }
        char c = s.charAt(pos++);
        if (c == ']') {
          return l;
        }
        if (c != ',') {
          pos--;
          throw error("expected ',' or ']'");
        }
      }
    }

    String string() {
      pos++;
      StringBuilder sb = null;
      int start = pos;
      while (true) {
        if (pos >= s.length()) {
          throw error("unterminated string");
        }
        char c = s.charAt(pos);
        if (c == '"') {
          String out = sb == null ? s.substring(start, pos) : sb.append(s, start, pos).toString();
          pos++;
          return out;
        }
        if (c < 0x20) {
          throw error("control character in string");
        }
        if (c == '\\') {
          if (sb == null) {
            sb = new StringBuilder();
          }
          sb.append(s, start, pos);
          pos++;
          if (pos >= s.length()) {
            throw error("unterminated escape");
          }
          char e = s.charAt(pos++);
          switch (e) {
            case '"':
            case '\\':
            case '/':
              sb.append(e);
              break;
            case 'b':
              sb.append('\b');
              break;
            case 'f':
              sb.append('\f');
              break;
            case 'n':
              sb.append('\n');
              break;
            case 'r':
              sb.append('\r');
              break;
            case 't':
              sb.append('\t');
              break;
            case 'u':
              if (pos + 4 > s.length()) {
                throw error("short \\u escape");
              }
              try {
                sb.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
              } catch (NumberFormatException ex) {
                throw error("bad \\u escape");
              }
              pos += 4;
              break;
            default:
              throw error("bad escape \\" + e);
          }
          start = pos;
        } else {
          pos++;
        }
      }
    }

    Object number() {
      int start = pos;
      if (s.charAt(pos) == '-') {
        pos++;
      }
      int intStart = pos;
      while (pos < s.length() && Character.isDigit(s.charAt(pos)) && s.charAt(pos) < 128) {
        pos++;
      }
      if (pos == intStart) {
        throw error("digit expected");
      }
      if (pos - intStart > 1 && s.charAt(intStart) == '0') {
        throw error("leading zero");
      }
      boolean integral = true;
      if (pos < s.length() && s.charAt(pos) == '.') {
        integral = false;
        pos++;
        int f = pos;
        while (pos < s.length() && s.charAt(pos) >= '0' && s.charAt(pos) <= '9') {
          pos++;
        }
        if (pos == f) {
          throw error("digit expected after '.'");
        }
      }
      if (pos < s.length() && (s.charAt(pos) == 'e' || s.charAt(pos) == 'E')) {
        integral = false;
        pos++;
        if (pos < s.length() && (s.charAt(pos) == '+' || s.charAt(pos) == '-')) {
          pos++;
        }
        int f = pos;
        while (pos < s.length() && s.charAt(pos) >= '0' && s.charAt(pos) <= '9') {
          pos++;
        }
        if (pos == f) {
          throw error("digit expected in exponent");
        }
      }
      String t = s.substring(start, pos);
      if (integral) {
        BigInteger b = new BigInteger(t);
        return b.bitLength() < 64 ? (Object) Long.valueOf(b.longValue()) : b;
      }
      return Double.valueOf(t);
    }
  }
}
