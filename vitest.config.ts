import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration files share one PostgreSQL, Redis and Kafka on a 2-core machine: one file at a time.
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    env: { LOG_LEVEL: 'silent', KAFKAJS_NO_PARTITIONER_WARNING: '1' },
  },
});
