import { afterAll, describe, expect, it } from 'vitest'
import { startRawUpstream } from '../../test/helpers/upstreams'
import { memoryLogger } from '../lib/logger'
import { EdgeMetrics } from './metrics'
import { createEdgeProxy } from './proxy'

/**
 * Chunked answers whose end comes in a packet of its own, as an app site's front (nginx) sends
 * them: held for their end and given whole, with a Content-Length, rather than streamed (which
 * costs the edge far more per request); an answer still open after the hold streams.
 */
let release: () => void = () => {}
const upstream = startRawUpstream((socket, head) => {
  socket.setNoDelay(true)
  const path = head.split(' ')[1]
  socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n')
  // The rest 1 ms later: its own packet, well within the hold.
  if (path === '/split') setTimeout(() => socket.write('6\r\n world\r\n0\r\n\r\n'), 1)
  // The rest only when the test says: the client must see the first part before.
  else release = () => socket.write('5\r\n, bye\r\n0\r\n\r\n')
})
const metrics = new EdgeMetrics()
const edge = createEdgeProxy({
  resolve: () => ({ siteId: 'app', slug: 'app', state: 'serving', upstream: { address: '127.0.0.1', port: upstream.port } }),
  metrics,
  log: memoryLogger(),
  siteUrl: 'http://localhost:8080',
})
const listener = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request, server) => edge.handle(request, server.requestIP(request)!.address) })
afterAll(() => {
  listener.stop(true)
  edge.close()
  upstream.stop()
})
const visit = (path: string) => fetch(`http://127.0.0.1:${listener.port}${path}`, { headers: { host: 'app.localhost' } })

describe('a chunked answer in several packets', () => {
  it('is answered whole, with its length, when its end follows at once; the connection is kept', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await visit('/split')
      expect(res.headers.get('content-length')).toBe('11')
      expect(res.headers.get('transfer-encoding')).toBeNull()
      expect(await res.text()).toBe('hello world')
    }
    expect(upstream.connections).toBe(1)
    expect([...metrics.allTotals()][0]!.bytesOut).toBe(55)
  })

  it('streams, first part first, when its end does not come', async () => {
    const res = await visit('/open')
    expect(res.headers.get('content-length')).toBeNull()
    const reader = res.body!.getReader()
    const first = await Promise.race([reader.read(), Bun.sleep(3000).then(() => 'stuck' as const)])
    expect(first).not.toBe('stuck')
    expect(new TextDecoder().decode((first as ReadableStreamReadResult<Uint8Array>).value)).toBe('hello')
    release()
    let rest = ''
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value)
    expect(rest).toBe(', bye')
  })
})
