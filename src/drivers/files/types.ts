import type { SiteHome } from './home'

/** Owner of everything the API writes. */
export interface FileOwner {
  uid: number
  gid: number
}

/** The `site` user and group of every site image (SITE_USER in runtime/site-container.ts). */
export const SITE_OWNER: FileOwner = { uid: 1000, gid: 1000 }

/**
 * Opens the home at `hostPath` (a site's volume, from `ContainerRuntime.homePath`) for the files
 * API's reads and writes, writing as `owner`. Throws (ENOENT) when the folder does not exist. The
 * caller closes it. The driver is `openSiteHome` of ./home.ts.
 */
export type OpenHome = (hostPath: string, owner: FileOwner) => SiteHome
