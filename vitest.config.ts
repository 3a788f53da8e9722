import { defineConfig } from 'vitest/config'

export default defineConfig({
  // Files Bun imports `with { type: 'text' }` (the in-container agent's scripts) load as text here too.
  plugins: [{
    name: 'text-imports',
    transform(code: string, id: string) {
      if (id.endsWith('.sh')) return { code: `export default ${JSON.stringify(code)}`, map: null }
    },
  }],
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
