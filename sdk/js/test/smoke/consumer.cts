// Type-checks the CommonJS declarations as a TypeScript partner sees them.
import sdk = require("@healthtech/partner-open-platform");

export const sig: string = sdk.signM("k", 1, "s", "");
export async function verify(c: InstanceType<typeof sdk.PartnerClient>): Promise<number> {
  const v = await c.verifyBenefitUse({ card_number: "123456789012345", benefit_item_id: 1 });
  return v.remaining_quantity;
}
