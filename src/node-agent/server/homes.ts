import { volumeMounts } from '../../drivers/runtime/node-volumes'
import type { HomeFolders } from './home-agent'

/**
 * The sites' homes on this node: `{volume}` is resolved to its folder through the local engine (a
 * site volume of Berth's only; any other answers as a missing folder), where ./home-agent.ts
 * answers the homes routes as the control plane's own box would.
 */
export function nodeHomes(dockerSocket: string): HomeFolders {
  const mountOf = volumeMounts(dockerSocket)
  return async (volume) => (await mountOf(volume)) ?? null
}
