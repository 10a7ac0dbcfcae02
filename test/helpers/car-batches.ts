import { carHoldBatchSize } from '../../shared/metrics/work.js';

/** Observations of car_hold_batch_size so far (this process's registry): how many statements, how many holds they carried. */
export async function batchTotals(): Promise<{ statements: number; holds: number }> {
  const { values } = await carHoldBatchSize.get();
  const of = (suffix: string) => values.find((v) => v.metricName === `car_hold_batch_size_${suffix}`)?.value ?? 0;
  return { statements: of('count'), holds: of('sum') };
}

