import { fileURLToPath } from 'node:url'
import type { Config } from '../../config/config'
import { FolderDestination } from './folder'
import type { OffsiteDestination } from './types'

/** The destination `offsite.url` names, or null when copies are off. */
export function selectOffsite(config: Config['offsite']): OffsiteDestination | null {
  if (!config.url) return null
  if (config.url.startsWith('file://')) return new FolderDestination(fileURLToPath(config.url).replace(/\/+$/, ''))
  // s3:// : drivers/offsite/s3.ts (issue 25, part S3).
  throw new Error(`offsite.url ${config.url}: the S3 destination is not built yet`)
}
