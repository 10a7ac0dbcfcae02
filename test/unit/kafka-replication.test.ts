import { describe, expect, it } from 'vitest';
import { topicReplication } from '../../workers/kafka.js';

describe('topic replication', () => {
  it('is 3 copies with min.insync.replicas=2 from 3 brokers on, as many copies as brokers below', () => {
    const entry = (n: number) => topicReplication(n).configEntries.find((e) => e.name === 'min.insync.replicas')!.value;
    expect([1, 2, 3, 5].map((n) => topicReplication(n).replicationFactor)).toEqual([1, 2, 3, 3]);
    expect([1, 2, 3, 5].map(entry)).toEqual(['1', '1', '2', '2']);
    expect(topicReplication(0).replicationFactor).toBe(1);
  });
});
