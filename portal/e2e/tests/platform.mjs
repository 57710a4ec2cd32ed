// Starts a real embedded platform ($PLATFORM_BIN, or built from the repo) as
// a child process on a free loopback port with a fresh data directory and
// loopback webhook targets allowed (development only), plus a loopback
// webhook receiver; stops both and deletes the directory afterwards.
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHTTPServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls fn every 100 ms until it returns a truthy value or timeoutMs passes (then throws naming what). */
export async function waitFor(what, fn, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

/** Starts the platform; extraEnv adds PLATFORM_* settings. */
export async function startPlatform(extraEnv = {}) {
  const dir = mkdtempSync(join(tmpdir(), "portal-e2e-platform-"));
  let bin = process.env.PLATFORM_BIN;
  if (!bin) {
    bin = join(dir, "platform");
    execFileSync("go", ["build", "-o", bin, "./cmd/platform"], { cwd: repoRoot, stdio: "inherit" });
  }
  const port = await freePort();
  const adminToken = randomBytes(24).toString("hex");
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("PLATFORM_")) env[k] = v;
  Object.assign(env, {
    PLATFORM_ADDR: `127.0.0.1:${port}`,
    PLATFORM_DATA_DIR: join(dir, "data"),
    PLATFORM_ADMIN_TOKEN: adminToken,
    PLATFORM_WEBHOOK_ALLOW_LOOPBACK: "on",
    PLATFORM_WEBHOOK_RETRY_SCHEDULE: "1s,1s,1s,1s,1s",
    ...extraEnv,
  });
  const logPath = join(dir, "platform.log");
  const log = openSync(logPath, "a");
  const child = spawn(bin, [], { env, stdio: ["ignore", log, log] });
  closeSync(log);
  let exited = null;
  child.on("exit", (code, signal) => (exited = { code, signal }));
  const baseUrl = `http://127.0.0.1:${port}`;
  const p = {
    baseUrl,
    adminToken,
    dataDir: join(dir, "data"),
    log: () => {
      try {
        return readFileSync(logPath, "utf8");
      } catch {
        return "";
      }
    },
    async stop() {
      if (exited === null) {
        child.kill("SIGTERM");
        for (let i = 0; i < 100 && exited === null; i++) await sleep(100);
        if (exited === null) child.kill("SIGKILL");
        for (let i = 0; i < 50 && exited === null; i++) await sleep(100);
      }
      rmSync(dir, { recursive: true, force: true });
    },
    /** An operator API call with the admin token; returns {status, body}. */
    async admin(method, path, body) {
      const res = await fetch(baseUrl + path, {
        method,
        headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
  };
  try {
    await waitFor(
      "GET /readyz 200",
      async () => {
        if (exited !== null) throw new Error(`platform exited ${JSON.stringify(exited)}:\n${p.log()}`);
        try {
          return (await fetch(baseUrl + "/readyz")).status === 200;
        } catch {
          return false;
        }
      },
      60000,
    );
  } catch (e) {
    await p.stop();
    throw e;
  }
  return p;
}

/** A loopback webhook receiver that answers 204 and keeps every request. */
export async function startReceiver() {
  const received = []; // {path, headers, body: string}
  const server = createHTTPServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      received.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}/hooks`,
    received,
    stop: () => new Promise((r) => server.close(r)),
  };
}
