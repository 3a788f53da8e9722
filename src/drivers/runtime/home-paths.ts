/**
 * The remembered home paths of sites (SiteRuntime.homePath: a volume's folder on this box, or
 * `node:{id}:{volume}` on another node), by slug, forgotten when a site's volume may have
 * changed node (a move's placeOn, a task's start or destroy, a removal).
 *
 * A lookup takes engine calls (the site's service, then its volume on that node's engine,
 * through the agent for a node), so it can end after a forget that came while it ran: what it
 * found then may be the node the site was leaving. Such a lookup's answer is returned to its
 * caller but not remembered (`remember` with the ticket taken when it began), or a move's
 * restore, which asks after the switch, would write the site's files into the old node's volume
 * (removed at the end of the move) and leave the new node's empty home to the image's default page.
 *
 * @example
 * const ticket = homes.ticket()
 * const path = await lookUp(slug)
 * homes.remember(slug, path, ticket)
 */
export class HomePaths {
  private paths = new Map<string, string>()
  /** Forgets so far (any site's): a lookup that began before the last one is not remembered. */
  private forgets = 0

  get(slug: string): string | undefined {
    return this.paths.get(slug)
  }

  /** Taken when a lookup begins, for `remember`. */
  ticket(): number {
    return this.forgets
  }

  /** Remembers `path` unless a forget came since `ticket` was taken. */
  remember(slug: string, path: string, ticket: number): void {
    if (ticket === this.forgets) this.paths.set(slug, path)
  }

  forget(slug: string): void {
    this.forgets++
    this.paths.delete(slug)
  }

  clear(): void {
    this.forgets++
    this.paths.clear()
  }
}
