import { handleHomeRequest, missingHomeResponse } from './home-agent'
import { volumeMounts } from '../../drivers/runtime/node-volumes'
import type { HomesHandler } from './api'

/**
 * The agent's homes routes on this node: `{volume}` is resolved to its folder through the local
 * engine (a site volume of Berth's only; any other answers as a missing folder), and the request
 * is answered there by drivers/files/home-agent.ts, as the control plane's own box would.
 */
export function nodeHomes(dockerSocket: string): HomesHandler {
  const mountOf = volumeMounts(dockerSocket)
  return async (request, volume, rest) => {
    const folder = await mountOf(volume)
    return folder ? handleHomeRequest(request, folder, rest) : missingHomeResponse()
  }
}
