import { describe, expect, it } from 'vitest'
import type { ClusterNode } from '../../cluster/types'
import { openEngine } from '../engine'
import { RuntimeUnavailableError } from '../types'
import { unavailableEngine } from './engine-errors'

/**
 * Which engine did not answer, said by the cluster runtime (issue 36 item 8: the repair pass
 * blamed the control plane's engine when a node's agent was stopped). Real dockerode calls that
 * fail for real: to a closed TCP port standing for a node's engine pass-through, and to a
 * missing Unix socket standing for this box's engine.
 */
const node = (port: number): ClusterNode => ({
  id: 'node_7f3k2q', name: 'box-b', address: '127.0.0.1', agentPort: port - 1, swarmNodeId: null, certFingerprint: '', certSerial: '', state: 'down', memoryBytes: 0, cpus: 0, joinedAt: 0, lastSeenAt: null,
})

/** A TCP port nothing listens on. */
function closedPort(): number {
  const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = server.port
  server.stop(true)
  return port
}

describe('an engine that does not answer, in a cluster', () => {
  it("names the node and its agent when a node's engine pass-through refuses, not this box's engine", async () => {
    const port = closedPort()
    const docker = await openEngine({ protocol: 'https', host: '127.0.0.1', port, ca: '', cert: '', key: '', checkServerIdentity: () => undefined }, 5_000)
    const err = await docker.ping().then(() => null, (e: unknown) => e)
    const named = unavailableEngine('/var/run/docker.sock', [node(port)], err)
    expect(named).toBeInstanceOf(RuntimeUnavailableError)
    expect(named!.message).toContain('Node box-b (node_7f3k2q, 127.0.0.1) did not answer')
    expect(named!.message).toContain('its agent (berth node serve, berth-node.service)')
    expect(named!.message).toContain('berth nodes evacuate node_7f3k2q')
    expect(named!.message).not.toContain('/var/run/docker.sock')
    expect(named!.message).not.toContain('systemctl start docker')
  })

  it("blames this box's engine when its own socket does not answer, and leaves other errors alone", async () => {
    const socket = `/tmp/berth-no-engine-${process.pid}.sock`
    const docker = await openEngine(socket, 5_000)
    const err = await docker.ping().then(() => null, (e: unknown) => e)
    const named = unavailableEngine(socket, [node(closedPort())], err)
    expect(named).toBeInstanceOf(RuntimeUnavailableError)
    expect(named!.message).toContain(`The Docker engine at ${socket} is not answering`)
    expect(unavailableEngine(socket, [], Object.assign(new Error('no such service'), { statusCode: 404 }))).toBeUndefined()
  })
})
