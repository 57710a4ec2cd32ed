// The portal's in-browser request signer. It computes the partner contract's
// signatures (scheme M: MD5, which WebCrypto lacks, so it is implemented
// here; scheme H, the plugin launch and webhook signatures: HMAC-SHA-256
// with WebCrypto), shows the headers and a curl command, and can send the
// signed request to this same origin. The app secret and webhook secret never
// leave the page: they are used as key material only, are in no request,
// URL, header or storage, and the inputs are not inside a <form>, so nothing
// can submit them. Loaded as an external file (CSP script-src 'self').
(function () {
  "use strict";

  var enc = new TextEncoder();

  function hex(bytes) {
    var out = "";
    for (var i = 0; i < bytes.length; i++) out += (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
    return out;
  }

  // ---- MD5 (RFC 1321) over bytes ----
  var S = [7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
    5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21];
  var K = [];
  for (var ki = 0; ki < 64; ki++) K[ki] = Math.floor(Math.abs(Math.sin(ki + 1)) * 4294967296) >>> 0;

  function md5(bytes) {
    var n = bytes.length;
    var total = (((n + 8) >>> 6) + 1) * 64;
    var m = new Uint8Array(total);
    m.set(bytes);
    m[n] = 0x80;
    var bits = n * 8;
    var dv = new DataView(m.buffer);
    dv.setUint32(total - 8, bits >>> 0, true);
    dv.setUint32(total - 4, Math.floor(bits / 4294967296) >>> 0, true);
    var a0 = 0x67452301, b0 = 0xefcdab89, c0 = 0x98badcfe, d0 = 0x10325476;
    var w = new Array(16);
    for (var off = 0; off < total; off += 64) {
      for (var j = 0; j < 16; j++) w[j] = dv.getUint32(off + j * 4, true);
      var a = a0, b = b0, c = c0, d = d0;
      for (var i = 0; i < 64; i++) {
        var f, g;
        if (i < 16) { f = (b & c) | (~b & d); g = i; }
        else if (i < 32) { f = (d & b) | (~d & c); g = (5 * i + 1) % 16; }
        else if (i < 48) { f = b ^ c ^ d; g = (3 * i + 5) % 16; }
        else { f = c ^ (b | ~d); g = (7 * i) % 16; }
        var t = d;
        d = c;
        c = b;
        var x = (a + f + K[i] + w[g]) >>> 0;
        b = (b + ((x << S[i]) | (x >>> (32 - S[i])))) >>> 0;
        a = t;
      }
      a0 = (a0 + a) >>> 0; b0 = (b0 + b) >>> 0; c0 = (c0 + c) >>> 0; d0 = (d0 + d) >>> 0;
    }
    var out = new Uint8Array(16);
    var ov = new DataView(out.buffer);
    ov.setUint32(0, a0, true); ov.setUint32(4, b0, true); ov.setUint32(8, c0, true); ov.setUint32(12, d0, true);
    return out;
  }

  function md5Hex(text) { return hex(md5(enc.encode(text))); }

  function subtle() {
    if (!window.crypto || !window.crypto.subtle) {
      throw new Error("WebCrypto is not available: open the portal over HTTPS (or on localhost)");
    }
    return window.crypto.subtle;
  }

  async function sha256Hex(text) {
    return hex(new Uint8Array(await subtle().digest("SHA-256", enc.encode(text))));
  }

  async function hmacHex(secret, text) {
    var key = await subtle().importKey("raw", enc.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    return hex(new Uint8Array(await subtle().sign("HMAC", key, enc.encode(text))));
  }

  // ---- the contract's signatures ----

  /** Scheme M: hex MD5 of app_key + timestamp + app_secret + body. */
  function schemeM(c) {
    var sig = md5Hex(c.appKey + String(c.timestamp) + c.appSecret + c.body);
    return { signature: sig, headers: { "X-App-Id": String(c.appId), "X-Timestamp": String(c.timestamp), "X-Signature": sig } };
  }

  /** Scheme H: HMAC-SHA-256 of METHOD\nURI\ntimestamp\nnonce\nhex(SHA-256(body)). */
  async function schemeH(c) {
    var signString = c.method.toUpperCase() + "\n" + c.uri + "\n" + String(c.timestamp) + "\n" + (c.nonce || "") + "\n" + (await sha256Hex(c.body));
    var sig = await hmacHex(c.appSecret, signString);
    var headers = { "X-App-Key": c.appKey, "X-Timestamp": String(c.timestamp), "X-Signature": sig };
    if (c.nonce) headers["X-Nonce"] = c.nonce;
    return { signString: signString, signature: sig, headers: headers };
  }

  /** Plugin launch: HMAC-SHA-256 of appKey|thirdUserId|timestamp|nonce. */
  async function launchSign(c) {
    var signString = [c.appKey, c.thirdUserId, String(c.timestamp), c.nonce].join("|");
    return { signString: signString, signature: await hmacHex(c.appSecret, signString) };
  }

  /** Webhook: HMAC-SHA-256 keyed with the webhook secret of timestamp + "." + body. */
  async function webhookSign(c) {
    return { signature: await hmacHex(c.webhookSecret, String(c.timestamp) + "." + c.body) };
  }

  window.PortalSigner = { md5Hex: md5Hex, schemeM: schemeM, schemeH: schemeH, launchSign: launchSign, webhookSign: webhookSign };

  // ---- the page ----
  var root = document.getElementById("signer");
  if (!root) return;

  function el(id) { return document.getElementById(id); }
  function val(id) { return el(id).value; }

  var hPatterns = [];
  try {
    hPatterns = JSON.parse(root.getAttribute("data-scheme-h-paths") || "[]").map(function (p) {
      var re = p.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\?\{[^}]*\\?\}/g, "[^/?]+");
      return new RegExp("^" + re + "(\\?.*)?$");
    });
  } catch (e) {
    hPatterns = [];
  }

  function schemeFor(path) {
    var chosen = val("scheme");
    if (chosen === "M" || chosen === "H") return chosen;
    for (var i = 0; i < hPatterns.length; i++) if (hPatterns[i].test(path)) return "H";
    return "M";
  }

  function shellQuote(s) { return "'" + String(s).replace(/'/g, "'\\''") + "'"; }

  function showError(msg) {
    el("signer-error").textContent = msg;
    el("signer-error").hidden = !msg;
  }

  // Reads the inputs and signs them; throws on input a request cannot have.
  async function sign() {
    var method = val("method").toUpperCase();
    var path = val("path").trim();
    if (path.charAt(0) !== "/" || path.charAt(1) === "/" || path.charAt(1) === "\\") {
      throw new Error("The path must start with a single / (requests go to this server only).");
    }
    var body = method === "GET" || method === "DELETE" ? "" : val("body");
    var ts = val("timestamp").trim();
    if (ts === "") ts = String(Math.floor(Date.now() / 1000));
    if (!/^[0-9]{1,12}$/.test(ts)) throw new Error("The timestamp must be Unix seconds.");
    var scheme = schemeFor(path);
    var c = { appId: val("app_id").trim(), appKey: val("app_key").trim(), appSecret: val("app_secret"), method: method, uri: path, body: body, timestamp: ts, nonce: val("nonce").trim() };
    if (!c.appSecret) throw new Error("Enter the app secret (it stays in this page).");
    var r = scheme === "H" ? await schemeH(c) : schemeM(c);
    var headers = r.headers;
    if (body !== "") headers["Content-Type"] = "application/json";
    return { scheme: scheme, method: method, path: path, body: body, headers: headers, signString: r.signString || "" };
  }

  function show(req) {
    el("used-scheme").textContent = "Scheme " + req.scheme;
    var lines = [];
    Object.keys(req.headers).forEach(function (h) { lines.push(h + ": " + req.headers[h]); });
    el("signed-headers").textContent = lines.join("\n");
    el("sign-string").textContent = req.signString;
    el("sign-string-block").hidden = req.signString === "";
    var curl = ["curl -sS -X " + req.method + " " + shellQuote(window.location.origin + req.path)];
    Object.keys(req.headers).forEach(function (h) { curl.push("-H " + shellQuote(h + ": " + req.headers[h])); });
    if (req.body !== "") curl.push("--data-binary " + shellQuote(req.body));
    el("curl").textContent = curl.join(" \\\n  ");
    el("signed").hidden = false;
  }

  el("sign").addEventListener("click", async function () {
    showError("");
    try {
      show(await sign());
    } catch (e) {
      showError(e.message);
    }
  });

  el("send").addEventListener("click", async function () {
    showError("");
    el("response-status").textContent = "sending…";
    el("response-body").textContent = "";
    try {
      var req = await sign();
      show(req);
      // Same origin only, without the portal's session cookie: the API
      // authenticates by signature alone.
      var res = await fetch(req.path, {
        method: req.method,
        headers: req.headers,
        body: req.body === "" ? undefined : req.body,
        credentials: "omit",
        cache: "no-store",
        redirect: "manual",
      });
      var text = await res.text();
      try {
        text = JSON.stringify(JSON.parse(text), null, 2);
      } catch (e) { /* not JSON: shown as it is */ }
      el("response-status").textContent = "HTTP " + res.status;
      el("response-body").textContent = text;
    } catch (e) {
      el("response-status").textContent = "";
      showError(e.message);
    }
  });

  el("verify-webhook").addEventListener("click", async function () {
    showError("");
    try {
      var r = await webhookSign({ webhookSecret: val("webhook_secret"), timestamp: val("webhook_timestamp").trim(), body: val("webhook_body") });
      el("webhook-expected").textContent = r.signature;
      var got = val("webhook_signature").trim().toLowerCase();
      el("webhook-verdict").textContent = got === "" ? "" : got === r.signature ? "Signature matches." : "Signature does NOT match.";
    } catch (e) {
      showError(e.message);
    }
  });
})();
