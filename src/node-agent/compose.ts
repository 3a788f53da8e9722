import { DEFAULT_NODE_DATA, NodeFiles } from '../drivers/cluster/node-files'
import type { SystemdNotifier } from '../drivers/systemd/notify'
import { createLogger } from '../lib/logger'
import { KeptNodeFirewall } from './server/firewall'
import type { HomeFolders } from './server/home-agent'
import { nodeHomes } from './server/homes'
import { KernelForwards } from './server/kernel-forwards'
import { startAgent } from './server/server'

/**
 * The node agent's composition: what `berth node serve` wires, from the node's data folder
 * (written by `berth node join`, ./join.ts) and nothing of the control plane's: the node's files,
 * its log, the site firewall it keeps (server/firewall.ts), the kernel's forwards, the homes of
 * its engine's volumes, and the agent's server (server/server.ts) over them.
 */

export { DEFAULT_NODE_DATA }

/** How often the node's site firewall is checked and restored (berth serve's reconcile pass, about as often). */
const FIREWALL_CHECK_MS = 30_000

/**
 * Runs the agent of the node whose data is in `dataDir` until SIGTERM or SIGINT. `homes` serves
 * the sites' homes on this node (default: server/homes.ts, the site volumes of its
 * engine). `notifier` tells systemd (berth-node.service, Type=notify) when the agent listens and when it stops.
 */
export async function serveNode(dataDir: string, homes?: HomeFolders, notifier?: SystemdNotifier): Promise<number> {
  const files = new NodeFiles(dataDir)
  const identity = files.identity()
  const log = createLogger('info')
  const firewall = new KeptNodeFirewall(files, identity, log)
  await firewall.keep()
  const firewallCheck = setInterval(() => void firewall.keep(), FIREWALL_CHECK_MS)
  const agent = await startAgent({
    nodeId: identity.nodeId, address: identity.address, agentPort: identity.agentPort, controlAddress: identity.controlAddress,
    tls: files.tls(), dockerSocket: identity.dockerSocket, homes: homes ?? nodeHomes(identity.dockerSocket), log,
    kernel: new KernelForwards({ node: identity.address, control: identity.controlAddress, log }),
    firewall,
  })
  notifier?.ready(`serving node ${identity.nodeId} on ${identity.address}:${identity.agentPort}`)
  await new Promise<void>((resolve) => {
    const stop = async (signal: string) => {
      log.info('stopping', { signal })
      notifier?.stopping('stopping')
      clearInterval(firewallCheck)
      await agent.stop()
      notifier?.stopped()
      resolve()
    }
    process.once('SIGTERM', () => void stop('SIGTERM'))
    process.once('SIGINT', () => void stop('SIGINT'))
  })
  return 0
}
