import type Docker from 'dockerode'
import type { Logger } from '../../../lib/logger'
import { followStream, orNull } from '../engine'

/**
 * Puts `image` on a node's engine as the manager has it (same image id): there is no registry, so
 * the manager's `GET /images/{name}/get` is streamed into the node's `POST /images/load`, never
 * held whole in memory. A node that has it already costs two inspects. Both clients must have no
 * request timeout (a PHP image is ~190 MB). Throws when the manager lacks the image.
 */
export class NodeImages {
  /** Transfers under way, by node and image: two sites placed at once share one. */
  private loading = new Map<string, Promise<void>>()

  constructor(private log: Logger) {}

  /** The manager's id of `image`, now on the node too. */
  async ensureOn(manager: Docker, node: Docker, nodeId: string, image: string): Promise<Docker.ImageInspectInfo> {
    const wanted = await orNull(manager.getImage(image).inspect())
    if (!wanted) throw new Error(`The image ${image} is missing; build it with 'berth images build'.`)
    if (node === manager) return wanted
    const there = await orNull(node.getImage(image).inspect())
    if (there?.Id === wanted.Id) return wanted
    const key = `${nodeId} ${wanted.Id}`
    let loading = this.loading.get(key)
    if (!loading) {
      loading = this.transfer(manager, node, nodeId, image).finally(() => this.loading.delete(key))
      this.loading.set(key, loading)
    }
    await loading
    return wanted
  }

  private async transfer(manager: Docker, node: Docker, nodeId: string, image: string): Promise<void> {
    const started = performance.now()
    const tar = await manager.getImage(image).get()
    const answer = await node.loadImage(tar as NodeJS.ReadableStream, { quiet: true })
    await followStream(node, answer)
    this.log.info('loaded an image on a node', { node: nodeId, image, ms: Math.round(performance.now() - started) })
  }
}
