import { join } from 'node:path'
import type { Config } from '../../config/config'
import type { Clock } from '../../lib/clock'
import { OpenSrsRegistrar } from './opensrs'
import { SandboxRegistrar } from './sandbox'
import type { Registrar } from './types'

/** The registrar the config names: the sandbox (state in the data folder) or OpenSRS. */
export function selectRegistrar(config: Config, clock: Clock): Registrar {
  if (config.registrar.driver === 'opensrs') {
    const { url, user, key } = config.registrar.opensrs
    return new OpenSrsRegistrar({ url, user, key })
  }
  return new SandboxRegistrar({ file: join(config.server.dataDir, 'sandbox-registrar.json'), clock })
}
