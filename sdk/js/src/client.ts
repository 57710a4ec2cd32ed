import { randomBytes, randomUUID } from "node:crypto";
import { PartnerApiError, type FieldErrors } from "./errors.js";
import type * as M from "./models.js";
import { operations, type OperationId, type OperationSpec } from "./operations.js";
import { signH, signM } from "./signing.js";

/** The request model of an operation, looked up from the generated operations table (undefined when it takes no body). */
export type RequestOf<Op extends OperationId> = (typeof operations)[Op]["request"] extends keyof M.Schemas
  ? M.Schemas[(typeof operations)[Op]["request"]]
  : undefined;

/** The response model of an operation (the envelope's data), looked up from the generated operations table. */
export type ResponseOf<Op extends OperationId> = (typeof operations)[Op]["response"] extends keyof M.Schemas
  ? M.Schemas[(typeof operations)[Op]["response"]]
  : void;

/** Retry policy for answers that say "try again" (429, 503, and 409 IDEMPOTENCY_KEY_IN_PROGRESS) and for network errors. */
export interface RetryOptions {
  /** Retries after the first attempt; 3 by default, 0 disables retries. */
  maxRetries?: number;
  /** First backoff delay in ms when no Retry-After was sent; doubled per retry, with full jitter. 250 by default. */
  baseDelayMs?: number;
  /** Longest backoff delay in ms. 8000 by default. */
  maxDelayMs?: number;
  /** A Retry-After longer than this (ms) is not waited for: the error is thrown instead. 60000 by default. */
  maxRetryAfterMs?: number;
}

/** How to reach the platform and who the partner is. The app secret signs requests and must stay on the partner's server. */
export interface PartnerClientOptions {
  /** Base address, e.g. https://sandbox.example.com; paths of the spec are appended. */
  baseUrl: string;
  /** Numeric app id (scheme M's X-App-Id). */
  appId: number | string;
  appKey: string;
  appSecret: string;
  /**
   * How the routes that accept either scheme are signed: "H" (the default)
   * signs method, path with query, timestamp, a fresh single-use nonce and the
   * body's SHA-256 with HMAC-SHA-256, so no two requests share a signature;
   * "M" signs the spec's MD5 scheme M. The report pull and the sandbox mock
   * always use scheme H.
   */
  scheme?: "H" | "M";
  retry?: RetryOptions;
  /** Per-attempt timeout in ms; 30000 by default. */
  timeoutMs?: number;
  /**
   * Send a fresh random Idempotency-Key with every write that accepts one
   * (unless the call passes its own), so writes are retried safely. true by default.
   */
  autoIdempotencyKeys?: boolean;
  /** fetch implementation; the global fetch by default. */
  fetch?: typeof fetch;
  /** Clock in ms; Date.now by default (tests pin it). */
  now?: () => number;
  /** Sleep used between retries; setTimeout by default (tests record it). */
  sleep?: (ms: number) => Promise<void>;
  /** Value of the User-Agent header. */
  userAgent?: string;
}

/** Per-call options of a write. */
export interface WriteOptions {
  /** Idempotency-Key to send (reuse it only to retry the same write); a random one is sent when omitted and autoIdempotencyKeys is on. */
  idempotencyKey?: string;
  /** X-Request-Id to send, to find the request in the platform logs. */
  requestId?: string;
  signal?: AbortSignal;
}

/** Per-call options of a read (or of a write that takes no Idempotency-Key): no key to choose. */
export interface ReadOptions {
  requestId?: string;
  signal?: AbortSignal;
}

/** A successful answer with its metadata, from PartnerClient.call. */
export interface ApiResponse<T> {
  status: number;
  data: T;
  /** X-Request-Id of the answer. */
  requestId: string | null;
  /** true when the platform replayed a recorded answer for the Idempotency-Key. */
  replayed: boolean;
  /** The Idempotency-Key sent, if any. */
  idempotencyKey: string | null;
}

/** Arguments of PartnerClient.call. */
export interface CallArgs {
  pathParams?: Record<string, string | number>;
  query?: object;
  body?: unknown;
  idempotencyKey?: string;
  requestId?: string;
  signal?: AbortSignal;
  /** Extra headers (the daily report's Authorization). */
  headers?: Record<string, string>;
}

const defaultUserAgent = "partner-open-platform-js/0.1.0";

function defaultSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function parseRetryAfter(v: string | null, nowMs: number): number | null {
  if (v === null || v.trim() === "") return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : Math.max(0, Math.ceil((t - nowMs) / 1000));
}

/**
 * A partner's client of the platform: every partner operation of the OpenAPI
 * document as a typed method named after its operationId, signed with scheme
 * H (scheme M by option) or the OAuth token as the operation requires, with retries on
 * 429/503 where repeating is safe, and PartnerApiError on every refusal.
 */
export class PartnerClient {
  readonly baseUrl: string;
  readonly appId: string;
  readonly appKey: string;
  readonly #appSecret: string;
  readonly #retry: Required<RetryOptions>;
  readonly #timeoutMs: number;
  readonly #autoKeys: boolean;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #userAgent: string;
  /** The signature scheme of the routes that accept either: "H" or "M". */
  readonly scheme: "H" | "M";
  #token: { value: string; expiresAtMs: number } | null = null;
  #tokenInFlight: Promise<string> | null = null;

  constructor(opts: PartnerClientOptions) {
    if (!opts.baseUrl) throw new TypeError("PartnerClient: baseUrl is required");
    if (!/^\d+$/.test(String(opts.appId))) throw new TypeError("PartnerClient: appId must be the numeric app id");
    if (!opts.appKey || !opts.appSecret) throw new TypeError("PartnerClient: appKey and appSecret are required");
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.appId = String(opts.appId);
    this.appKey = opts.appKey;
    this.#appSecret = opts.appSecret;
    this.#retry = {
      maxRetries: opts.retry?.maxRetries ?? 3,
      baseDelayMs: opts.retry?.baseDelayMs ?? 250,
      maxDelayMs: opts.retry?.maxDelayMs ?? 8000,
      maxRetryAfterMs: opts.retry?.maxRetryAfterMs ?? 60000,
    };
    this.#timeoutMs = opts.timeoutMs ?? 30000;
    this.#autoKeys = opts.autoIdempotencyKeys ?? true;
    const scheme = opts.scheme ?? "H";
    if (scheme !== "H" && scheme !== "M") throw new TypeError(`PartnerClient: scheme must be "H" or "M", not ${JSON.stringify(opts.scheme)}`);
    this.scheme = scheme;
    this.#fetch = opts.fetch ?? globalThis.fetch;
    this.#now = opts.now ?? Date.now;
    this.#sleep = opts.sleep ?? defaultSleep;
    this.#userAgent = opts.userAgent ?? defaultUserAgent;
    if (typeof this.#fetch !== "function") throw new TypeError("PartnerClient: no fetch available (Node 20+ has one)");
  }

  // ---- channel users ----

  /** One-step register and bind (user, family groups, members); 200 with created=false on a repeat. */
  registerChannelUser(body: RequestOf<"registerChannelUser">, opts: WriteOptions = {}): Promise<ResponseOf<"registerChannelUser">> {
    return this.#data("registerChannelUser", { body, ...opts });
  }

  /** The user's full snapshot (user, valid groups and members). */
  getChannelUserSnapshot(openUserId: number, query: M.GetChannelUserSnapshotQuery = {}, opts: ReadOptions = {}): Promise<ResponseOf<"getChannelUserSnapshot">> {
    return this.#data("getChannelUserSnapshot", { pathParams: { openUserId }, query, ...opts });
  }

  /** Changes only the fields sent (null nickname clears it). */
  updateChannelUser(openUserId: number, body: RequestOf<"updateChannelUser">, opts: WriteOptions = {}): Promise<ResponseOf<"updateChannelUser">> {
    return this.#data("updateChannelUser", { pathParams: { openUserId }, body, ...opts });
  }

  /** Creates the family group, or renames it when app_group_id exists. */
  upsertFamilyGroup(openUserId: number, body: RequestOf<"upsertFamilyGroup">, opts: WriteOptions = {}): Promise<ResponseOf<"upsertFamilyGroup">> {
    return this.#data("upsertFamilyGroup", { pathParams: { openUserId }, body, ...opts });
  }

  /** Dissolves a family group and soft-deletes its members (irreversible). */
  dissolveFamilyGroup(openUserId: number, groupId: number, opts: WriteOptions = {}): Promise<ResponseOf<"dissolveFamilyGroup">> {
    return this.#data("dissolveFamilyGroup", { pathParams: { openUserId, groupId }, ...opts });
  }

  /** Creates or updates a family member keyed by app_user_id. */
  upsertFamilyMember(openUserId: number, body: RequestOf<"upsertFamilyMember">, opts: WriteOptions = {}): Promise<ResponseOf<"upsertFamilyMember">> {
    return this.#data("upsertFamilyMember", { pathParams: { openUserId }, body, ...opts });
  }

  /** Soft-deletes a family member. */
  deleteFamilyMember(openUserId: number, memberId: number, opts: WriteOptions = {}): Promise<ResponseOf<"deleteFamilyMember">> {
    return this.#data("deleteFamilyMember", { pathParams: { openUserId, memberId }, ...opts });
  }

  // ---- webhooks: delivery log, resend, secret, feed ----

  /** One page of the app's delivery log; see iterateMyDeliveries for every page. */
  listMyDeliveries(query: M.ListMyDeliveriesQuery = {}, opts: ReadOptions = {}): Promise<ResponseOf<"listMyDeliveries">> {
    return this.#data("listMyDeliveries", { query, ...opts });
  }

  /** Every delivery of the log matching query, page after page (following next_cursor). */
  async *iterateMyDeliveries(query: M.ListMyDeliveriesQuery = {}, opts: ReadOptions = {}): AsyncGenerator<M.Delivery> {
    let after = query.after;
    for (;;) {
      const page = await this.listMyDeliveries({ ...query, after }, opts);
      yield* page.deliveries;
      if (!page.next_cursor || page.deliveries.length === 0) return;
      after = page.next_cursor;
    }
  }

  /** One delivery with its attempts. */
  getMyDelivery(deliveryId: string, opts: ReadOptions = {}): Promise<ResponseOf<"getMyDelivery">> {
    return this.#data("getMyDelivery", { pathParams: { deliveryId }, ...opts });
  }

  /** Asks the platform to deliver a delivery again (same delivery_id and body). */
  resendMyDelivery(deliveryId: string, opts: WriteOptions = {}): Promise<ResponseOf<"resendMyDelivery">> {
    return this.#data("resendMyDelivery", { pathParams: { deliveryId }, ...opts });
  }

  /** Acknowledges the erasure of one of the app's users (the `user.erased` webhook names them): the app erased its copies. Idempotent. */
  acknowledgeErasure(openUserId: number, opts: WriteOptions = {}): Promise<ResponseOf<"acknowledgeErasure">> {
    return this.#data("acknowledgeErasure", { pathParams: { openUserId }, ...opts });
  }

  /** One page of who accessed this app's users' data and why (its own report pulls, operators' reveals). */
  listMyAccessLog(query: M.ListMyAccessLogQuery = {}, opts: ReadOptions = {}): Promise<ResponseOf<"listMyAccessLog">> {
    return this.#data("listMyAccessLog", { query, ...opts });
  }

  /** Asks for the app's past webhook events of the chosen types (since a time or after a feed cursor) to be delivered again to one endpoint, under their original delivery ids; poll getWebhookReplay. */
  requestWebhookReplay(body: RequestOf<"requestWebhookReplay">, opts: WriteOptions = {}): Promise<ResponseOf<"requestWebhookReplay">> {
    return this.#data("requestWebhookReplay", { body, ...opts });
  }

  /** A replay's status and counts. */
  getWebhookReplay(replayId: number, opts: ReadOptions = {}): Promise<ResponseOf<"getWebhookReplay">> {
    return this.#data("getWebhookReplay", { pathParams: { replayId }, ...opts });
  }

  /** Stops a running replay; what it already queued is still sent. */
  cancelWebhookReplay(replayId: number, opts: WriteOptions = {}): Promise<ResponseOf<"cancelWebhookReplay">> {
    return this.#data("cancelWebhookReplay", { pathParams: { replayId }, ...opts });
  }

  /** Creates a pending webhook secret (shown once; signs nothing until activated). Not retried: it has no idempotency key. */
  rotateMyWebhookSecret(opts: ReadOptions = {}): Promise<ResponseOf<"rotateMyWebhookSecret">> {
    return this.#data("rotateMyWebhookSecret", { ...opts });
  }

  /** Makes the pending webhook secret the one that signs deliveries. Not retried: it has no idempotency key. */
  activateMyWebhookSecret(opts: ReadOptions = {}): Promise<ResponseOf<"activateMyWebhookSecret">> {
    return this.#data("activateMyWebhookSecret", { ...opts });
  }

  /** One page of the app's event feed; see iterateWebhookEvents for every page. With query.wait (seconds, 1 to 20) a long-poll: when nothing follows query.after the platform holds the request until an event arrives or the wait ends (keep timeoutMs above it; 30 s by default). */
  webhookEventFeed(query: M.WebhookEventFeedQuery = {}, opts: ReadOptions = {}): Promise<ResponseOf<"webhookEventFeed">> {
    return this.#data("webhookEventFeed", { query, ...opts });
  }

  /** Every feed event after query.after, page after page while has_more; resume later from the last event's cursor. */
  async *iterateWebhookEvents(query: M.WebhookEventFeedQuery = {}, opts: ReadOptions = {}): AsyncGenerator<M.FeedEvent> {
    let after = query.after;
    for (;;) {
      const page = await this.webhookEventFeed({ ...query, after }, opts);
      yield* page.events;
      if (!page.has_more || page.events.length === 0) return;
      after = page.next_cursor;
    }
  }

  // ---- webhook endpoints: endpoint 0 is the default one (the app's webhook_url, signed with the app's webhook secret) ----

  /** The app's webhook endpoints, the default one (id 0) first while it has a URL; no secret is listed. */
  listMyWebhookEndpoints(opts: ReadOptions = {}): Promise<ResponseOf<"listMyWebhookEndpoints">> {
    return this.#data("listMyWebhookEndpoints", { ...opts });
  }

  /** Adds an endpoint; the answer's webhook_secret signs its deliveries and is shown this once. */
  createMyWebhookEndpoint(body: RequestOf<"createMyWebhookEndpoint">, opts: WriteOptions = {}): Promise<ResponseOf<"createMyWebhookEndpoint">> {
    return this.#data("createMyWebhookEndpoint", { body, ...opts });
  }

  /** One endpoint (0: the default one). */
  getMyWebhookEndpoint(endpointId: number, opts: ReadOptions = {}): Promise<ResponseOf<"getMyWebhookEndpoint">> {
    return this.#data("getMyWebhookEndpoint", { pathParams: { endpointId }, ...opts });
  }

  /** Changes any of url, events ([] or null: every event), enabled and description ("" or null: none); answers the endpoint after the change. */
  updateMyWebhookEndpoint(endpointId: number, body: RequestOf<"updateMyWebhookEndpoint">, opts: WriteOptions = {}): Promise<ResponseOf<"updateMyWebhookEndpoint">> {
    return this.#data("updateMyWebhookEndpoint", { pathParams: { endpointId }, body, ...opts });
  }

  /** Removes an endpoint; for endpoint 0 it clears the app's webhook_url. */
  deleteMyWebhookEndpoint(endpointId: number, opts: WriteOptions = {}): Promise<ResponseOf<"deleteMyWebhookEndpoint">> {
    return this.#data("deleteMyWebhookEndpoint", { pathParams: { endpointId }, ...opts });
  }

  /** Issues a pending secret (pending_webhook_secret, shown once); the current one keeps signing until activation. */
  rotateMyWebhookEndpointSecret(endpointId: number, opts: WriteOptions = {}): Promise<ResponseOf<"rotateMyWebhookEndpointSecret">> {
    return this.#data("rotateMyWebhookEndpointSecret", { pathParams: { endpointId }, ...opts });
  }

  /** Makes the endpoint's pending secret the only one that signs. */
  activateMyWebhookEndpointSecret(endpointId: number, opts: WriteOptions = {}): Promise<ResponseOf<"activateMyWebhookEndpointSecret">> {
    return this.#data("activateMyWebhookEndpointSecret", { pathParams: { endpointId }, ...opts });
  }

  /** Queues one signed webhook.test delivery to this endpoint only. */
  sendMyWebhookEndpointTest(endpointId: number, opts: WriteOptions = {}): Promise<ResponseOf<"sendMyWebhookEndpointTest">> {
    return this.#data("sendMyWebhookEndpointTest", { pathParams: { endpointId }, ...opts });
  }

  // ---- health reports ----

  /** Pulls a health report with scheme H (a fresh nonce per attempt). */
  pullHealthReport(openReportId: number, opts: ReadOptions = {}): Promise<ResponseOf<"pullHealthReport">> {
    return this.#data("pullHealthReport", { pathParams: { openReportId }, ...opts });
  }

  /** Obtains an OAuth 2.0 client-credentials access token for the daily report (HTTP Basic with app key and secret). */
  oauthToken(opts: ReadOptions = {}): Promise<ResponseOf<"oauthToken">> {
    return this.#data("oauthToken", { body: { grant_type: "client_credentials", scope: "daily_report" }, ...opts });
  }

  /** Revokes an access token (and forgets it if it is the cached one). */
  async oauthRevoke(token: string, opts: ReadOptions = {}): Promise<ResponseOf<"oauthRevoke">> {
    if (this.#token?.value === token) this.#token = null;
    return this.#data("oauthRevoke", { body: { token }, ...opts });
  }

  /** A user's daily report; the access token is obtained, cached until shortly before expiry, and renewed once on 401. */
  async getDailyReport(query: M.GetDailyReportQuery, opts: ReadOptions = {}): Promise<ResponseOf<"getDailyReport">> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.#accessToken();
      try {
        return await this.#data("getDailyReport", { query, ...opts, headers: { Authorization: `Bearer ${token}`, "X-App-Key": this.appKey } });
      } catch (e) {
        if (attempt === 0 && e instanceof PartnerApiError && e.status === 401) {
          this.#token = null;
          continue;
        }
        throw e;
      }
    }
  }

  async #accessToken(): Promise<string> {
    if (this.#token && this.#token.expiresAtMs > this.#now()) return this.#token.value;
    this.#tokenInFlight ??= (async () => {
      try {
        const t = await this.oauthToken();
        this.#token = { value: t.access_token, expiresAtMs: this.#now() + Math.max(0, t.expires_in - 60) * 1000 };
        return t.access_token;
      } finally {
        this.#tokenInFlight = null;
      }
    })();
    return this.#tokenInFlight;
  }

  // ---- plugin sandbox ----

  /** Sandbox only: the platform sends plugin.report.ready for a mock measurement within about a second. appKey defaults to this client's. */
  sandboxMockMeasure(body: Omit<M.MockMeasureRequest, "appKey"> & { appKey?: string }, opts: WriteOptions = {}): Promise<ResponseOf<"sandboxMockMeasure">> {
    return this.#data("sandboxMockMeasure", { body: { appKey: this.appKey, ...body }, ...opts });
  }

  // ---- orders ----

  /** Creates a purchase order (PENDING_REVIEW). */
  createOrder(body: RequestOf<"createOrder">, opts: WriteOptions = {}): Promise<ResponseOf<"createOrder">> {
    return this.#data("createOrder", { body, ...opts });
  }

  /** An order with its items, by order_code. */
  getOrderDetail(orderCode: string, opts: ReadOptions = {}): Promise<ResponseOf<"getOrderDetail">> {
    return this.#data("getOrderDetail", { query: { order_code: orderCode }, ...opts });
  }

  /** Causes a sample webhook event of a given type (sandbox apps only); it is delivered and enters the feed like the real event. */
  triggerSandboxEvent(body: RequestOf<"triggerSandboxEvent">, opts: WriteOptions = {}): Promise<ResponseOf<"triggerSandboxEvent">> {
    return this.#data("triggerSandboxEvent", { body, ...opts });
  }

  /** Sandbox only: marks an order shipped so the order.shipped webhook can be tried. */
  sandboxShippedCallbackTest(body: RequestOf<"sandboxShippedCallbackTest">, opts: WriteOptions = {}): Promise<ResponseOf<"sandboxShippedCallbackTest">> {
    return this.#data("sandboxShippedCallbackTest", { body, ...opts });
  }

  // ---- benefit cards ----

  /** Registers the calling app as a service provider (then reviewed by the platform). */
  registerOwnServiceProvider(body: RequestOf<"registerOwnServiceProvider">, opts: WriteOptions = {}): Promise<ResponseOf<"registerOwnServiceProvider">> {
    return this.#data("registerOwnServiceProvider", { body, ...opts });
  }

  /** Issues a batch of benefit cards (approved channel partners). */
  batchIssueBenefitCards(body: RequestOf<"batchIssueBenefitCards">, opts: WriteOptions = {}): Promise<ResponseOf<"batchIssueBenefitCards">> {
    return this.#data("batchIssueBenefitCards", { body, ...opts });
  }

  /** Consumes uses of a benefit item on a card (irreversible); retried safely with its Idempotency-Key. */
  verifyBenefitUse(body: RequestOf<"verifyBenefitUse">, opts: WriteOptions = {}): Promise<ResponseOf<"verifyBenefitUse">> {
    return this.#data("verifyBenefitUse", { body, ...opts });
  }

  /** A benefit card with its items and remaining quantities. */
  getBenefitCard(cardNumber: string, opts: ReadOptions = {}): Promise<ResponseOf<"getBenefitCard">> {
    return this.#data("getBenefitCard", { query: { card_number: cardNumber }, ...opts });
  }

  /** One page of fulfillment records; see iterateFulfillments for every page. */
  listFulfillments(query: M.ListFulfillmentsQuery = {}, opts: ReadOptions = {}): Promise<ResponseOf<"listFulfillments">> {
    return this.#data("listFulfillments", { query, ...opts });
  }

  /** Every fulfillment record after query.after, page after page (a short page is the last). */
  async *iterateFulfillments(query: M.ListFulfillmentsQuery = {}, opts: ReadOptions = {}): AsyncGenerator<M.Fulfillment> {
    const limit = query.limit ?? 100;
    let after = query.after;
    for (;;) {
      const page = await this.listFulfillments({ ...query, after, limit }, opts);
      yield* page.fulfillments;
      const last = page.fulfillments[page.fulfillments.length - 1];
      if (page.fulfillments.length < limit || !last) return;
      after = last.fulfillment_record_id;
    }
  }

  /** Records the user's 1-5 rating of a fulfillment. */
  rateFulfillment(recordId: number, body: RequestOf<"rateFulfillment">, opts: WriteOptions = {}): Promise<ResponseOf<"rateFulfillment">> {
    return this.#data("rateFulfillment", { pathParams: { recordId }, body, ...opts });
  }

  // ---- the engine ----

  async #data<Op extends OperationId>(op: Op, args: CallArgs): Promise<ResponseOf<Op>> {
    return (await this.call(op, args)).data;
  }

  /**
   * Sends one partner operation by operationId and returns the data with the
   * answer's metadata. Every typed method goes through here; it is public for
   * reading X-Request-Id or Idempotent-Replayed of a success.
   */
  async call<Op extends OperationId>(op: Op, args: CallArgs = {}): Promise<ApiResponse<ResponseOf<Op>>> {
    const spec: OperationSpec = operations[op];
    if (!spec) throw new TypeError(`unknown operation ${String(op)}`);
    let path = spec.path;
    for (const name of spec.pathParams) {
      const v = args.pathParams?.[name];
      if (v === undefined || v === null || v === "") throw new TypeError(`${op}: path parameter ${name} is required`);
      path = path.replace(`{${name}}`, encodeURIComponent(String(v)));
    }
    const qs = new URLSearchParams();
    const q = (args.query ?? {}) as Record<string, unknown>;
    for (const name of spec.query) {
      const v = q[name];
      if (v !== undefined && v !== null) qs.append(name, String(v));
    }
    const uri = qs.size > 0 ? `${path}?${qs.toString()}` : path;

    let body: Buffer = Buffer.alloc(0);
    let contentType: string | null = null;
    if (spec.requestContentType === "application/x-www-form-urlencoded") {
      const form = new URLSearchParams();
      for (const [k, v] of Object.entries((args.body ?? {}) as Record<string, unknown>)) if (v !== undefined && v !== null) form.append(k, String(v));
      body = Buffer.from(form.toString(), "utf8");
      contentType = spec.requestContentType;
    } else if (spec.requestContentType) {
      body = Buffer.from(JSON.stringify(args.body ?? {}), "utf8");
      contentType = spec.requestContentType;
    }
    // Operations without a request body (DELETE, resend, secret rotation) send none and sign the empty string.

    const idempotencyKey = spec.idempotencyKey ? (args.idempotencyKey ?? (this.#autoKeys ? randomUUID() : undefined)) : undefined;
    const safe = spec.method === "GET" || idempotencyKey !== undefined;

    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { Accept: "application/json", "User-Agent": this.#userAgent, ...(args.headers ?? {}) };
      if (contentType) headers["Content-Type"] = contentType;
      if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
      if (args.requestId) headers["X-Request-Id"] = args.requestId;
      this.#authenticate(spec, uri, body, headers); // per attempt: a retry gets a fresh timestamp and nonce

      let res: Response;
      try {
        const signal = args.signal ? AbortSignal.any([args.signal, AbortSignal.timeout(this.#timeoutMs)]) : AbortSignal.timeout(this.#timeoutMs);
        res = await this.#fetch(this.baseUrl + uri, { method: spec.method, headers, body: body.length > 0 ? body : undefined, signal });
      } catch (e) {
        if (args.signal?.aborted) throw e;
        if (safe && attempt < this.#retry.maxRetries) {
          await this.#sleep(this.#backoff(attempt));
          continue;
        }
        throw e;
      }
      const text = await res.text();
      let parsed: unknown = undefined;
      if (text !== "") {
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = text;
        }
      }
      const requestId = res.headers.get("X-Request-Id");
      if (res.ok) {
        const data = spec.envelope ? (parsed as { data?: unknown } | undefined)?.data : parsed;
        return {
          status: res.status,
          data: data as ResponseOf<Op>,
          requestId,
          replayed: res.headers.get("Idempotent-Replayed") === "true",
          idempotencyKey: idempotencyKey ?? null,
        };
      }
      const err = this.#error(op, res, parsed, text, requestId);
      const again =
        res.status === 429 || res.status === 503 || (res.status === 409 && err.code === "IDEMPOTENCY_KEY_IN_PROGRESS" && idempotencyKey !== undefined);
      if (again && safe && attempt < this.#retry.maxRetries) {
        const wait = err.retryAfterSeconds !== null ? err.retryAfterSeconds * 1000 : this.#backoff(attempt);
        if (wait <= this.#retry.maxRetryAfterMs) {
          await this.#sleep(wait);
          continue;
        }
      }
      throw err;
    }
  }

  #backoff(attempt: number): number {
    const cap = Math.min(this.#retry.maxDelayMs, this.#retry.baseDelayMs * 2 ** attempt);
    return Math.floor(cap / 2 + Math.random() * (cap / 2));
  }

  #error(op: string, res: Response, parsed: unknown, text: string, requestId: string | null): PartnerApiError {
    const o = (typeof parsed === "object" && parsed !== null ? parsed : {}) as Record<string, unknown>;
    let code: string | null = null;
    if (typeof o.code === "string") code = o.code;
    else if (typeof o.error === "string") code = o.error;
    const message =
      typeof o.message === "string" ? o.message : typeof o.error_description === "string" ? o.error_description : text || res.statusText || `HTTP ${res.status}`;
    const fieldErrors: FieldErrors = {};
    if (typeof o.errors === "object" && o.errors !== null) {
      for (const [k, v] of Object.entries(o.errors as Record<string, unknown>)) fieldErrors[k] = Array.isArray(v) ? v.map(String) : [String(v)];
    }
    return new PartnerApiError({
      status: res.status,
      code,
      message,
      fieldErrors,
      requestId,
      retryAfterSeconds: parseRetryAfter(res.headers.get("Retry-After"), this.#now()),
      operationId: op,
      body: parsed,
    });
  }

  #authenticate(spec: OperationSpec, uri: string, body: Buffer, headers: Record<string, string>): void {
    const nowSec = Math.floor(this.#now() / 1000);
    // The document declares scheme M on the app-signed routes; the platform
    // takes scheme H there too, which the client signs unless told otherwise.
    const auth = spec.auth === "M" ? this.scheme : spec.auth;
    switch (auth) {
      case "M": {
        headers["X-App-Id"] = this.appId;
        headers["X-Timestamp"] = String(nowSec);
        headers["X-Signature"] = signM(this.appKey, nowSec, this.#appSecret, body);
        return;
      }
      case "H": {
        const nonce = randomBytes(16).toString("hex");
        headers["X-App-Key"] = this.appKey;
        headers["X-Timestamp"] = String(nowSec);
        headers["X-Nonce"] = nonce;
        headers["X-Signature"] = signH({ appSecret: this.#appSecret, method: spec.method, uri, timestamp: nowSec, nonce, body });
        return;
      }
      case "basic":
        headers["Authorization"] = "Basic " + Buffer.from(`${this.appKey}:${this.#appSecret}`, "utf8").toString("base64");
        return;
      case "bearer":
        return; // getDailyReport sets Authorization and X-App-Key.
    }
  }
}
