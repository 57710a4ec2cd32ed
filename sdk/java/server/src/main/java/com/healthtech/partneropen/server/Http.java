package com.healthtech.partneropen.server;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

/**
 * One HTTP exchange. HttpURLConnection for every method it allows; PATCH (which the JDK's HttpURLConnection refuses
 * and the platform needs for the user update) goes over a minimal HTTP/1.1 exchange on a plain or TLS socket with
 * hostname verification, so the SDK needs neither java.net.http nor a third-party HTTP library.
 */
final class Http {
  private Http() {}

  /** Status, body, and the two headers the client reads. */
  static final class Result {
    final int status;
    final byte[] body;
    final String requestId;
    final String retryAfter;

    Result(int status, byte[] body, String requestId, String retryAfter) {
      this.status = status;
      this.body = body;
      this.requestId = requestId;
      this.retryAfter = retryAfter;
    }
  }

  static Result exchange(String method, URL url, Map<String, String> headers, byte[] body, int connectMillis,
      int readMillis) throws IOException {
    HttpURLConnection c = (HttpURLConnection) url.openConnection();
    try {
      c.setRequestMethod(method);
    } catch (ProtocolException e) {
      c.disconnect();
      return raw(method, url, headers, body, connectMillis, readMillis);
    }
    try {
      c.setConnectTimeout(connectMillis);
      c.setReadTimeout(readMillis);
      c.setInstanceFollowRedirects(false);
      c.setUseCaches(false);
      for (Map.Entry<String, String> h : headers.entrySet()) {
        c.setRequestProperty(h.getKey(), h.getValue());
      }
      if (body != null) {
        // Buffered, not streaming mode: in streaming mode HttpURLConnection drops the body of a 401 answer to a
        // write, and the error type needs the code in it.
        c.setDoOutput(true);
        try (OutputStream os = c.getOutputStream()) {
          os.write(body);
        }
      }
      int status = c.getResponseCode();
      InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream();
      byte[] bytes = in == null ? new byte[0] : readAll(in);
      return new Result(status, bytes, c.getHeaderField("X-Request-Id"), c.getHeaderField("Retry-After"));
    } finally {
      c.disconnect();
    }
  }

  static Result raw(String method, URL url, Map<String, String> headers, byte[] body, int connectMillis,
      int readMillis) throws IOException {
    boolean tls = url.getProtocol().equalsIgnoreCase("https");
    int port = url.getPort() == -1 ? url.getDefaultPort() : url.getPort();
    Socket plain = new Socket();
    Socket s = plain;
    try {
      plain.connect(new InetSocketAddress(url.getHost(), port), connectMillis);
      if (tls) {
        SSLSocket ssl = (SSLSocket) ((SSLSocketFactory) SSLSocketFactory.getDefault())
            .createSocket(plain, url.getHost(), port, true);
        SSLParameters p = ssl.getSSLParameters();
        p.setEndpointIdentificationAlgorithm("HTTPS");
        ssl.setSSLParameters(p);
        ssl.startHandshake();
        s = ssl;
      }
      s.setSoTimeout(readMillis);
      StringBuilder req = new StringBuilder();
      String file = url.getFile().isEmpty() ? "/" : url.getFile();
      req.append(method).append(' ').append(file).append(" HTTP/1.1\r\n");
      boolean defaultPort = url.getPort() == -1 || url.getPort() == url.getDefaultPort();
      req.append("Host: ").append(url.getHost()).append(defaultPort ? "" : ":" + port).append("\r\n");
      for (Map.Entry<String, String> h : headers.entrySet()) {
        if (h.getValue().indexOf('\r') >= 0 || h.getValue().indexOf('\n') >= 0) {
          throw new IllegalArgumentException("header " + h.getKey() + " contains a line break");
        }
        req.append(h.getKey()).append(": ").append(h.getValue()).append("\r\n");
      }
      req.append("Content-Length: ").append(body == null ? 0 : body.length).append("\r\n");
      req.append("Connection: close\r\n\r\n");
      OutputStream out = s.getOutputStream();
      out.write(req.toString().getBytes(StandardCharsets.UTF_8));
      if (body != null) {
        out.write(body);
      }
      out.flush();
      InputStream in = new BufferedInputStream(s.getInputStream());
      String statusLine = line(in);
      String[] parts = statusLine.split(" ", 3);
      if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
        throw new IOException("bad status line: " + statusLine);
      }
      int status = Integer.parseInt(parts[1]);
      long length = -1;
      boolean chunked = false;
      String requestId = null;
      String retryAfter = null;
      for (String h = line(in); !h.isEmpty(); h = line(in)) {
        int i = h.indexOf(':');
        if (i <= 0) {
          continue;
        }
        String k = h.substring(0, i).trim().toLowerCase(Locale.ROOT);
        String v = h.substring(i + 1).trim();
        if (k.equals("content-length")) {
          length = Long.parseLong(v);
        } else if (k.equals("transfer-encoding") && v.toLowerCase(Locale.ROOT).contains("chunked")) {
          chunked = true;
        } else if (k.equals("x-request-id")) {
          requestId = v;
        } else if (k.equals("retry-after")) {
          retryAfter = v;
        }
      }
      byte[] bytes;
      if (chunked) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        while (true) {
          String size = line(in);
          int semi = size.indexOf(';');
          int n = Integer.parseInt((semi < 0 ? size : size.substring(0, semi)).trim(), 16);
          if (n == 0) {
            break;
          }
          b.write(exactly(in, n));
          line(in);
        }
        bytes = b.toByteArray();
      } else if (length >= 0) {
        bytes = exactly(in, (int) length);
      } else {
        bytes = readAll(in);
      }
      return new Result(status, bytes, requestId, retryAfter);
    } finally {
      s.close();
    }
  }

  private static String line(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    for (int c = in.read(); c != '\n'; c = in.read()) {
      if (c < 0) {
        throw new EOFException("connection closed mid-response");
      }
      if (b.size() > 65536) {
        throw new IOException("response header line too long");
      }
      b.write(c);
    }
    String s = new String(b.toByteArray(), StandardCharsets.ISO_8859_1);
    return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
  }

  private static byte[] exactly(InputStream in, int n) throws IOException {
    byte[] out = new byte[n];
    int off = 0;
    while (off < n) {
      int r = in.read(out, off, n - off);
      if (r < 0) {
        throw new EOFException("connection closed mid-body");
      }
      off += r;
    }
    return out;
  }

  static byte[] readAll(InputStream in) throws IOException {
    try (InputStream i = in) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buf = new byte[8192];
      int n;
      while ((n = i.read(buf)) >= 0) {
        out.write(buf, 0, n);
      }
      return out.toByteArray();
    }
  }
}
