/** Why a site's files changed. */
export type ChangeReason = 'files' | 'deploy' | 'restore'

export interface SiteChange {
  siteId: string
  slug: string
  reason: ChangeReason
}

/**
 * Tells whoever keeps something derived from a site's files (the chatbot's index, the seo
 * module's sitemap) that they changed: a write, upload, delete or new folder through the files
 * API, a finished deploy, a finished restore. Changes made over SSH are not seen here; the
 * listeners also look again on their own schedule. Listeners must be quick and must not throw.
 */
export class SiteChanges {
  private listeners: ((change: SiteChange) => void)[] = []

  subscribe(listener: (change: SiteChange) => void): void {
    this.listeners.push(listener)
  }

  changed(change: SiteChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change)
      } catch {
        // a listener's fault is its own
      }
    }
  }
}
