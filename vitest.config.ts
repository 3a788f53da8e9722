import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

/**
 * Three tiers, each runnable on its own (`bun run test:unit`, `test:service`, `test:e2e`):
 * - unit: `*.test.ts`. No Docker engine, no build: pure code, and the API in-process on a
 *   temporary SQLite file with the RecordingRuntime double (test/helpers). Runs as root (files
 *   given to uid 1000, a device node) with tar, du, ssh-keygen, mkfifo and mknod (README). About a
 *   minute. Its files share their worker's modules (isolate: false, docs/testing.md).
 * - service: `*.service.test.ts`. In-process on real SQLite and the real Docker engine, with the
 *   site images built (`berth images build`).
 * - e2e: `*.e2e.test.ts`. The compiled dist/berth as a process over real sockets, on real Docker.
 * - solo: `*.solo.e2e.test.ts`. End-to-end tests that disturb the whole machine (they restart the
 *   Docker engine, run Berth under systemd on the host network and restart it under load, or
 *   take the engine's jump into DOCKER-USER away for a moment): run after the others, one file
 *   at a time (scripts/test.sh).
 */
const SERVICE = '**/*.service.test.ts'
const E2E = '**/*.e2e.test.ts'
const SOLO = '**/*.solo.e2e.test.ts'
const ALL = ['src/**/*.test.ts', 'test/**/*.test.ts']
const TEXT_IMPORTS = [/\.sh$/, /\/src\/console\/client\.js$/, /\/@xterm\/[^/]+\/lib\/[^/]+\.js$/]

export default defineConfig({
  // Files Bun imports `with { type: 'text' }` load as text here too: the in-container agent's
  // scripts, and the console page's scripts (src/console/assets.ts), which would otherwise run
  // (and fail: no `document`) in any test that imports the server.
  plugins: [{
    name: 'text-imports',
    enforce: 'pre',
    transform(code: string, id: string) {
      if (TEXT_IMPORTS.some((pattern) => pattern.test(id))) return { code: `export default ${JSON.stringify(code)}`, map: null }
    },
  }],
  test: {
    pool: 'threads',
    // xterm.js goes through the plugin above, not Node's loader.
    server: { deps: { inline: [/@xterm\//] } },
    // One migrated database per run, copied for each test's store (test/helpers/migrated-db.ts).
    globalSetup: ['test/helpers/migrated-db.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // End-to-end suites start dist/berth on their own ports and data folders; files run in
    // parallel on the machine's cores. Vitest's default is one worker fewer than the cores, which
    // on a 2-core box runs one file at a time: the service and end-to-end files mostly wait on
    // the engine and on processes, and two at a time take about 9 minutes instead of 14.
    fileParallelism: true,
    maxWorkers: Math.max(2, availableParallelism()),
    projects: [
      // Unit files share their worker's modules (isolate: false): each file importing the whole
      // API again was a third of the tier's time (issue 36). They hold no module state (no
      // singletons in src/, no vi.mock), and each builds its own store, clock and services.
      { extends: true, test: { name: 'unit', include: ALL, exclude: [SERVICE, E2E, '**/node_modules/**'], isolate: false } },
      { extends: true, test: { name: 'service', include: ALL.map((g) => g.replace('*.test.ts', '*.service.test.ts')) } },
      { extends: true, test: { name: 'e2e', include: ALL.map((g) => g.replace('*.test.ts', '*.e2e.test.ts')), exclude: [SOLO, '**/node_modules/**'] } },
      { extends: true, test: { name: 'solo', include: ALL.map((g) => g.replace('*.test.ts', '*.solo.e2e.test.ts')), fileParallelism: false } },
    ],
  },
})
