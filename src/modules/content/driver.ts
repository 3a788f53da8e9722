import type { ContentModuleDriver } from '../../domain/modules'
import type { ContentService } from './service'

/** The content module for the modules service: nothing to set up or leave behind; it writes pages on request. */
export function contentDriver(content: Pick<ContentService, 'generate'>): ContentModuleDriver {
  return {
    name: 'content',
    description: 'New pages written from a brief into public/, one per generate request; needs an AI provider.',
    enable: async () => {},
    disable: async () => {},
    generate: (site, brief) => content.generate(site, brief),
  }
}
