import type { AiModuleDriver } from '../../domain/modules'
import type { TranslationService } from './service'

/**
 * Translation for the modules service: nothing to do when it is turned on; its cached pages
 * deleted when it is turned off. `translation` is null without an AI provider (the module is
 * then listed, never available).
 */
export function translationDriver(translation: Pick<TranslationService, 'remove'> | null): AiModuleDriver {
  return {
    name: 'translation',
    description: 'Every page served translated under /{lang}/ (fr, es, de, it, pt, nl, en), cached per page version; needs an AI provider.',
    enable: async () => {},
    disable: async (site) => translation?.remove(site.siteId),
  }
}
