import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    pool: 'threads',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // End-to-end suites start dist/berth on their own ports and data folders; files run in
    // parallel on the machine's cores.
    fileParallelism: true,
  },
})
