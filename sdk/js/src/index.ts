export { PartnerClient } from "./client.js";
export type { PartnerClientOptions, RetryOptions, WriteOptions, ReadOptions, ApiResponse, CallArgs, RequestOf, ResponseOf } from "./client.js";
export { PartnerApiError } from "./errors.js";
export type { FieldErrors, PartnerApiErrorInit } from "./errors.js";
export {
  signM,
  signH,
  schemeHSignString,
  signPluginLaunch,
  signWebhook,
  verifyWebhook,
  WebhookVerificationError,
  DEFAULT_TOLERANCE_SECONDS,
} from "./signing.js";
export type { BodyInput, SchemeHInput, VerifyWebhookInput, WebhookVerificationReason } from "./signing.js";
export { parseWebhookEvent, constructWebhookEvent, isWebhookEventName, isCataloguedEventType, WebhookPayloadError } from "./webhooks.js";
export { eventTypes } from "./eventTypes.js";
export type { EventTypeName } from "./eventTypes.js";
export type { WebhookEvent, WebhookEventName, HeaderSource, ConstructWebhookEventInput, VerifiedWebhook } from "./webhooks.js";
export {
  PluginHost,
  PluginError,
  buildPluginLaunchUrl,
  parsePluginLaunchUrl,
  encryptPluginProfile,
  decryptPluginProfile,
  pluginProfileKey,
  deviceModes,
} from "./plugin.js";
export type { PluginProfile, PluginLaunch, CreateLaunchInput, DeviceKey } from "./plugin.js";
export { operations, webhookEvents } from "./operations.js";
export type { OperationId, OperationSpec, AuthScheme } from "./operations.js";
export type * from "./models.js";
