import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { RecordingRuntime } from '../../../test/helpers/recording-runtime'
import { followContainerEvents } from '../../compose'

// GET /status/ and the engine: whether it answers comes from the event watcher's liveness checks
// (drivers/runtime/events.ts, tested against a stand-in engine in events.test.ts).
const runtime = new RecordingRuntime()
const h = inProcess({ runtime })
afterAll(async () => {
  await h.close()
  runtime.close()
})

const status = async () => (await h.call('GET', '/api/v1/status/')).json.data

describe('GET /status/', () => {
  it("says whether the container engine answers, and is degraded while it does not", async () => {
    // Before the watcher's first check, nothing is known yet.
    expect(await status()).toMatchObject({ status: 'ok', engine: { reachable: null }, api_version: 'v1', region: 'local', provider: 'berth' })
    const unfollow = followContainerEvents(h.services)
    try {
      expect(await status()).toMatchObject({ status: 'ok', engine: { reachable: true } })
      runtime.setReachable(false)
      expect(await status()).toMatchObject({ status: 'degraded', engine: { reachable: false } })
      runtime.setReachable(true)
      expect(await status()).toMatchObject({ status: 'ok', engine: { reachable: true } })
    } finally {
      unfollow()
    }
  })
})
