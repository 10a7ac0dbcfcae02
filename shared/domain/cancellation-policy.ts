const HOUR_MS = 3_600_000;

export interface RefundInput {
  deposit: number;
  pickupAt: Date;
  cancelledAt: Date;
  /** Host of the car or an operator: the customer gets everything back. */
  cancelledByProvider: boolean;
}

/** Refund for cancelling a CONFIRMED booking, in minor units (always an integer, rounded down). */
export function refundAmount({ deposit, pickupAt, cancelledAt, cancelledByProvider }: RefundInput): number {
  if (cancelledByProvider) return deposit;
  const before = pickupAt.getTime() - cancelledAt.getTime();
  if (before >= 72 * HOUR_MS) return deposit;
  if (before >= 24 * HOUR_MS) return Math.floor(deposit / 2);
  return 0;
}
