// Type-checks the ESM declarations as a TypeScript partner sees them.
import { PartnerClient, PartnerApiError, type WebhookEvent, type RegisterResult, constructWebhookEvent } from "@healthtech/partner-open-platform";

const c = new PartnerClient({ baseUrl: "https://sandbox.example", appId: 1, appKey: "k", appSecret: "s" });
export async function day(): Promise<number> {
  const r: RegisterResult = await c.registerChannelUser({ channel_user_id: "u", user: { name: "n" } });
  try {
    await c.getChannelUserSnapshot(r.open_user_id);
  } catch (e) {
    if (e instanceof PartnerApiError && e.code === "USER_NOT_FOUND") return e.status;
  }
  return r.open_user_id;
}
export function onEvent(ev: WebhookEvent): string {
  switch (ev.event) {
    case "health.report.created":
      return String(ev.open_report_id);
    case "user.family_member.created":
      return ev.data.app_user_id;
    case "order.shipped":
      return ev.tracking_number;
    default:
      return ev.event;
  }
}
export const v = constructWebhookEvent;
