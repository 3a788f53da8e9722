// TEMPORARY STUB (lead engineer, to compile while the real driver is written): replace this whole file.
import type { Registrar } from './types'
export class OpenSrsRegistrar implements Registrar {
  readonly name = 'opensrs'
  readonly sandbox = false
  constructor(_o: { url: string; user: string; key: string }) {}
  search(): never { throw new Error('stub') }
  register(): never { throw new Error('stub') }
  renew(): never { throw new Error('stub') }
  setNameservers(): never { throw new Error('stub') }
  updateSettings(): never { throw new Error('stub') }
  transferOutCode(): never { throw new Error('stub') }
}
