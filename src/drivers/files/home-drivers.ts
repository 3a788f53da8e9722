import { gnuTar } from '../archives/home-tar'
import { measureDiskUsage, type DiskUsage } from './disk-usage'
import { entryExists } from './entry'
import { openSiteHome } from './home'
import { HostSiteFiles } from './site-reader'
import type { OpenHome } from './types'

/**
 * Every driver that takes a site's home path (ContainerRuntime.homePath), as compose hands them
 * to the services: the files API, exec, logs and access log (openHome), archives, deploys and
 * restores (tar), metrics (measureDisk), the deploy hook's check (entryExists), the modules'
 * reader (siteFiles). One box: `localHomes`, folders here. A cluster's control plane:
 * drivers/cluster/node-homes.ts's, which send a `node:{nodeId}:{volume}` path to that node's agent.
 */
export interface HomeDrivers {
  openHome: OpenHome
  /** domain/archives/tarballs.ts's HomeTarballs. */
  tar: typeof gnuTar
  measureDisk: (home: string) => Promise<DiskUsage>
  entryExists: (dir: string, name: string) => Promise<boolean>
  siteFiles: (homePath: (slug: string) => Promise<string>) => HostSiteFiles
}

/** The home drivers of a single box: folders on this host. */
export const localHomes: HomeDrivers = {
  openHome: openSiteHome,
  tar: gnuTar,
  measureDisk: (home) => measureDiskUsage(home),
  entryExists,
  siteFiles: (homePath) => new HostSiteFiles(homePath),
}
