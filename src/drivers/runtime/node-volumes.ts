import { openEngine, orNull } from './engine'
import { LABEL } from './site-container'

/**
 * The mount point of a site's home volume on this node's engine, for the node agent's homes
 * routes (drivers/cluster/agent/homes.ts): only a volume Berth made for a site (labelled
 * `dev.berth.managed=true` with a site id) answers; any other name, or none, is null. A node
 * serves one control plane, so every Berth volume on it is that control plane's.
 */
export function volumeMounts(socketPath: string): (volume: string) => Promise<string | null> {
  const engine = openEngine(socketPath)
  return async (volume) => {
    const info = await orNull((await engine).getVolume(volume).inspect())
    const labels = info?.Labels ?? {}
    if (!info || labels[LABEL.managed] !== 'true' || !labels[LABEL.siteId]) return null
    return info.Mountpoint
  }
}
