import type { AiModuleDriver } from '../../domain/modules'
import type { ChatbotService } from './service'

/** The chatbot for the modules service: its index built when it is turned on, deleted when it is turned off. */
export function chatbotDriver(chatbot: Pick<ChatbotService, 'sync' | 'remove'>): AiModuleDriver {
  return {
    name: 'chatbot',
    description: "A chat widget on the site's pages that answers visitors from the site's own pages, linking the page it used.",
    enable: (site) => chatbot.sync(site),
    disable: async (site) => chatbot.remove(site.siteId),
  }
}
