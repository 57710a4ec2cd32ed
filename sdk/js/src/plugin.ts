import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";
import { signPluginLaunch } from "./signing.js";

/** The measurement devices a host may launch the plugin for. */
export type DeviceKey = "HOME_MULTI_BIO_MONITOR" | "HOME_SPO2_RING" | "HEARTLOG_ECG_RECORDER" | "BODY_COMPOSITION_ANALYSIS";

/** Accepted measureMode values per device and the report_type each produces (as the platform's plugin package). */
export const deviceModes: Readonly<Record<DeviceKey, Readonly<Record<string, string>>>> = {
  HOME_MULTI_BIO_MONITOR: { BP: "blood_pressure", BG: "blood_glucose" },
  HOME_SPO2_RING: { SPO2: "spo2" },
  HEARTLOG_ECG_RECORDER: { ECG: "ecg" },
  BODY_COMPOSITION_ANALYSIS: { BCA: "bca" },
};

/** The person data the host passes to the plugin, encrypted into userProfile (never sent in clear). */
export interface PluginProfile {
  /** Mainland 11-digit mobile; lets the platform bind platform_user_id. */
  phone?: string;
  gender?: "male" | "female" | "unknown";
  /** Y-m-d. */
  birth_date?: string;
  /** Centimetres, 30 to 300. */
  height?: number;
  /** Kilograms × 100, 100 to 50000. */
  weight?: number;
  name?: string;
  /** Echoed as metadata in plugin.report.ready. */
  metadata?: string;
}

/** The launch parameters the host server returns to its front end (the data of the host response). */
export interface PluginLaunch {
  appKey: string;
  thirdUserId: string;
  userProfile: string;
  timestamp: string;
  nonce: string;
  sign: string;
  deviceKey: string;
  measureMode: string;
}

/** Thrown when launch parameters or a profile are refused; field names the offending parameter. */
export class PluginError extends Error {
  /** The offending parameter, in the spec's spelling. */
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = "PluginError";
    this.field = field;
  }
}

const kdfSalt = "partner-open-platform/plugin";
const kdfInfo = "userProfile v1";
const ivSize = 12;
const tagSize = 16;
const windowSeconds = 300;

/** userProfile key: HKDF-SHA-256 of the app secret (salt partner-open-platform/plugin, info userProfile v1, 32 bytes). */
export function pluginProfileKey(appSecret: string): Buffer {
  return Buffer.from(hkdfSync("sha256", Buffer.from(appSecret, "utf8"), Buffer.from(kdfSalt), Buffer.from(kdfInfo), 32));
}

const profileFields = ["phone", "gender", "birth_date", "height", "weight", "name", "metadata"] as const;

function profileJSON(p: PluginProfile): string {
  const o: Record<string, unknown> = {};
  for (const f of profileFields) {
    const v = p[f];
    if (v !== undefined && v !== "" && v !== 0) o[f] = v;
  }
  return JSON.stringify(o);
}

/** Encrypts a profile: base64 of IV || AES-256-GCM ciphertext || tag, with appKey|thirdUserId as associated data. */
export function encryptPluginProfile(appSecret: string, appKey: string, thirdUserId: string, profile: PluginProfile, iv: Uint8Array = randomBytes(ivSize)): string {
  if (iv.length !== ivSize) throw new PluginError("iv", `must be ${ivSize} bytes`);
  const c = createCipheriv("aes-256-gcm", pluginProfileKey(appSecret), iv, { authTagLength: tagSize });
  c.setAAD(Buffer.from(`${appKey}|${thirdUserId}`, "utf8"));
  const ct = Buffer.concat([c.update(profileJSON(profile), "utf8"), c.final()]);
  return Buffer.concat([iv, ct, c.getAuthTag()]).toString("base64");
}

/** Decrypts a userProfile made for appKey and thirdUserId; throws PluginError when it was tampered with or made for another user. */
export function decryptPluginProfile(appSecret: string, appKey: string, thirdUserId: string, userProfile: string): PluginProfile {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(userProfile) || userProfile.length % 4 !== 0) throw new PluginError("userProfile", "is not base64");
  const raw = Buffer.from(userProfile, "base64");
  if (raw.length < ivSize + tagSize) throw new PluginError("userProfile", "is too short");
  const d = createDecipheriv("aes-256-gcm", pluginProfileKey(appSecret), raw.subarray(0, ivSize), { authTagLength: tagSize });
  d.setAAD(Buffer.from(`${appKey}|${thirdUserId}`, "utf8"));
  d.setAuthTag(raw.subarray(raw.length - tagSize));
  let plain: string;
  try {
    plain = Buffer.concat([d.update(raw.subarray(ivSize, raw.length - tagSize)), d.final()]).toString("utf8");
  } catch {
    throw new PluginError("userProfile", "failed authentication");
  }
  const v: unknown = JSON.parse(plain);
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new PluginError("userProfile", "plaintext is not a JSON object");
  return v as PluginProfile;
}

function reportType(deviceKey: string, measureMode: string): string {
  const m = (deviceModes as Record<string, Record<string, string>>)[deviceKey];
  if (!m) throw new PluginError("deviceKey", `must be one of ${Object.keys(deviceModes).sort().join(", ")}`);
  const rt = m[measureMode];
  if (!rt) throw new PluginError("measureMode", `is not a mode of ${deviceKey}; must be one of ${Object.keys(m).sort().join(", ")}`);
  return rt;
}

function checkProfile(deviceKey: string, p: PluginProfile): void {
  if (deviceKey === "BODY_COMPOSITION_ANALYSIS") {
    if (!p.height) throw new PluginError("height", "required for BODY_COMPOSITION_ANALYSIS");
    if (!p.gender) throw new PluginError("gender", "required for BODY_COMPOSITION_ANALYSIS");
    if (!p.birth_date) throw new PluginError("birth_date", "required for BODY_COMPOSITION_ANALYSIS");
  }
  if (p.phone && !/^1[3-9][0-9]{9}$/.test(p.phone)) throw new PluginError("phone", "must be an 11-digit mainland mobile number");
  if (p.height && (p.height < 30 || p.height > 300)) throw new PluginError("height", "must be 30..300 cm");
  if (p.weight && (p.weight < 100 || p.weight > 50000)) throw new PluginError("weight", "must be 100..50000 (kg × 100)");
}

/** Inputs of PluginHost.createLaunch: what the host's front end asked for, plus the person's profile. */
export interface CreateLaunchInput {
  thirdUserId: string;
  deviceKey: DeviceKey | string;
  measureMode: string;
  profile?: PluginProfile;
  /** Current time (Unix seconds or Date); the system clock by default. */
  now?: number | Date;
}

/**
 * The host server's side of the plugin integration. It holds the app secret,
 * so it belongs on the host's server only, never in mini-program code.
 */
export class PluginHost {
  readonly appKey: string;
  readonly #appSecret: string;
  constructor(opts: { appKey: string; appSecret: string }) {
    if (!opts.appKey || opts.appKey.includes("|")) throw new PluginError("appKey", "required, without '|'");
    if (!opts.appSecret) throw new PluginError("appSecret", "required");
    this.appKey = opts.appKey;
    this.#appSecret = opts.appSecret;
  }

  /** Signed launch parameters with the encrypted profile: the data of the host endpoint's response. */
  createLaunch(input: CreateLaunchInput): PluginLaunch {
    if (!input.thirdUserId) throw new PluginError("thirdUserId", "required");
    reportType(input.deviceKey, input.measureMode);
    const profile = input.profile ?? {};
    checkProfile(input.deviceKey, profile);
    const now = input.now === undefined ? Date.now() / 1000 : input.now instanceof Date ? input.now.getTime() / 1000 : input.now;
    const timestamp = String(Math.floor(now));
    const nonce = randomBytes(16).toString("hex");
    return {
      appKey: this.appKey,
      thirdUserId: input.thirdUserId,
      userProfile: encryptPluginProfile(this.#appSecret, this.appKey, input.thirdUserId, profile),
      timestamp,
      nonce,
      sign: signPluginLaunch(this.#appSecret, this.appKey, input.thirdUserId, timestamp, nonce),
      deviceKey: input.deviceKey,
      measureMode: input.measureMode,
    };
  }

  /** The whole host endpoint response body: {code: 0, data: launch}. */
  hostResponse(input: CreateLaunchInput): { code: 0; data: PluginLaunch } {
    return { code: 0, data: this.createLaunch(input) };
  }

  /** Checks a launch's timestamp window and sign (constant time) and returns its decrypted profile; throws PluginError. */
  verifyLaunch(launch: PluginLaunch, now: number | Date = Date.now() / 1000): PluginProfile {
    const n = Math.floor(now instanceof Date ? now.getTime() / 1000 : now);
    if (!/^[0-9]{10}$/.test(launch.timestamp)) throw new PluginError("timestamp", "must be 10-digit Unix seconds");
    if (Math.abs(n - Number(launch.timestamp)) > windowSeconds) throw new PluginError("timestamp", "outside the ±300 s window");
    const want = Buffer.from(signPluginLaunch(this.#appSecret, launch.appKey, launch.thirdUserId, launch.timestamp, launch.nonce), "hex");
    const got = /^[0-9a-fA-F]{64}$/.test(launch.sign) ? Buffer.from(launch.sign, "hex") : Buffer.alloc(want.length);
    if (!timingSafeEqual(got, want) || !/^[0-9a-fA-F]{64}$/.test(launch.sign)) throw new PluginError("sign", "does not match");
    reportType(launch.deviceKey, launch.measureMode);
    const p = decryptPluginProfile(this.#appSecret, launch.appKey, launch.thirdUserId, launch.userProfile);
    checkProfile(launch.deviceKey, p);
    return p;
  }
}

const urlPrefix = "plugin://platform-measure/bind?";
const urlParams = ["appKey", "thirdUserId", "userProfile", "timestamp", "nonce", "sign", "deviceKey", "measureMode"] as const;

function escape(s: string): string {
  // Go's url.QueryEscape with spaces as %20: encodeURIComponent plus the characters it leaves alone.
  return encodeURIComponent(s).replace(/[!'()*~]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}

/** The plugin page URL the host's front end opens; sandbox appends env=sandbox (remove it in production). Needs no secret. */
export function buildPluginLaunchUrl(launch: PluginLaunch, opts: { sandbox?: boolean } = {}): string {
  const q = urlParams.map((k) => `${k}=${escape(launch[k])}`).join("&");
  return urlPrefix + q + (opts.sandbox ? "&env=sandbox" : "");
}

/** Parses a plugin launch URL back into its parameters; throws PluginError when one is missing or repeated. */
export function parsePluginLaunchUrl(url: string): { launch: PluginLaunch; sandbox: boolean } {
  if (!url.startsWith(urlPrefix)) throw new PluginError("url", `must start with ${urlPrefix}`);
  const q = new URLSearchParams(url.slice(urlPrefix.length).replace(/\+/g, "%2B"));
  const launch = {} as Record<string, string>;
  for (const k of urlParams) {
    const v = q.getAll(k);
    if (v.length === 0 || v[0] === "") throw new PluginError(k, "required");
    if (v.length > 1) throw new PluginError(k, "given more than once");
    launch[k] = v[0]!;
  }
  const env = q.getAll("env");
  if (env.length > 1 || (env.length === 1 && env[0] !== "sandbox")) throw new PluginError("env", "only a single env=sandbox is allowed");
  return { launch: launch as unknown as PluginLaunch, sandbox: env.length === 1 };
}
