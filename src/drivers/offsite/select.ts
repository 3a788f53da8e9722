import { fileURLToPath } from 'node:url'
import type { Config } from '../../config/config'
import { FolderDestination } from './folder'
import { S3Destination } from './s3'
import type { OffsiteDestination } from './types'

/** The destination `offsite.url` names, or null when copies are off. */
export function selectOffsite(config: Config['offsite']): OffsiteDestination | null {
  if (!config.url) return null
  if (config.url.startsWith('file://')) return new FolderDestination(fileURLToPath(config.url).replace(/\/+$/, ''))
  return new S3Destination(config)
}

/**
 * What names the destination for `OffsiteCopiesRepository.followDestination`: `offsite.url`, and
 * for S3 the host of `offsite.endpoint` (`aws` when empty), since one bucket name may be at two
 * services. Never a credential: another key to the same bucket is the same destination.
 */
export function destinationOf(config: Pick<Config['offsite'], 'url' | 'endpoint'>): string {
  if (!config.url.startsWith('s3://')) return config.url.replace(/\/+$/, '')
  return `${config.url.replace(/\/+$/, '')} at ${config.endpoint ? new URL(config.endpoint).host : 'aws'}`
}
