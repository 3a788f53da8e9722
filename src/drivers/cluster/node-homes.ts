import { gnuTar } from '../archives/home-tar'
import { measureDiskUsage } from '../files/disk-usage'
import { entryExists } from '../files/entry'
import { openSiteHome } from '../files/home'
import { callHome, homeEndpoint, openRemoteHome, remoteDiskUsage, remoteEntryExists, remoteReplaceHome, remoteTarHome, RemoteSiteReader, type HomeEndpoint } from '../../node-agent/client/remote-home'
import { HomeReader, HostSiteFiles, type OpenedReader } from '../files/site-reader'
import type { HomeDrivers } from '../files/home-drivers'
import { NodeUnreachableError, parseNodeHome, type ClusterNode, type NodeLink } from './types'

/**
 * The files drivers of a cluster's control plane (issue 28): each takes a home path as
 * ContainerRuntime.homePath answers it, a folder on this box (a site on the control plane, as
 * on a single box: the local driver, unchanged) or `node:{nodeId}:{volume}` (a site on another
 * node: through that node's agent, drivers/files/remote-home.ts). The same shapes as the local
 * drivers (HomeDrivers), so compose hands them to the same services when cluster.enabled:
 *
 *   const homes = nodeHomes({ link, node: (id) => nodes.find(id) })
 *   buildModules(core, { content, homes })
 *   buildSites(core, { ..., homes })
 */
export interface NodeHomesDeps {
  link: NodeLink
  /** The node of an id, as the store keeps it; null when there is none. */
  node: (id: string) => ClusterNode | null
}

/**
 * HomeDrivers (drivers/files/home-drivers.ts): `tar` is gnuTar's shape, with tarHome and
 * replaceHome of a node home through its agent (the archive files themselves, scanTar and
 * compression stay here); `siteFiles` is a HostSiteFiles that reads node homes through their agents.
 */
export interface NodeHomes extends HomeDrivers {
  /** A reader of a home path (HostSiteFiles' opener). */
  openReader: (hostPath: string) => Promise<OpenedReader>
}

export function nodeHomes(d: NodeHomesDeps): NodeHomes {
  /** The endpoint of a node home path, or null for a folder on this box. */
  const remote = (path: string): HomeEndpoint | null => {
    const home = parseNodeHome(path)
    if (!home) return null
    const node = d.node(home.nodeId)
    if (!node) throw new NodeUnreachableError(`Node ${home.nodeId} is not part of the cluster.`)
    return homeEndpoint(d.link, node, home.volume)
  }
  const openReader = async (hostPath: string): Promise<OpenedReader> => {
    const endpoint = remote(hostPath)
    if (!endpoint) return HomeReader.open(hostPath)
    await callHome(endpoint, 'open', [])
    return new RemoteSiteReader(endpoint)
  }
  return {
    openHome: async (hostPath, owner) => {
      const endpoint = remote(hostPath)
      return endpoint ? openRemoteHome(endpoint, owner) : openSiteHome(hostPath, owner)
    },
    tar: {
      ...gnuTar,
      tarHome: async (home, outFile, keep) => {
        const endpoint = remote(home)
        return endpoint ? remoteTarHome(endpoint, outFile, keep) : gnuTar.tarHome(home, outFile, keep)
      },
      replaceHome: async (home, tarFile, keep) => {
        const endpoint = remote(home)
        return endpoint ? remoteReplaceHome(endpoint, tarFile, keep) : gnuTar.replaceHome(home, tarFile, keep)
      },
    },
    measureDisk: async (home) => {
      const endpoint = remote(home)
      return endpoint ? remoteDiskUsage(endpoint) : measureDiskUsage(home)
    },
    entryExists: async (dir, name) => {
      const endpoint = remote(dir)
      return endpoint ? remoteEntryExists(endpoint, name) : entryExists(dir, name)
    },
    openReader,
    siteFiles: (homePath) => new HostSiteFiles(homePath, openReader),
  }
}
