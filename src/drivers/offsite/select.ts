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
