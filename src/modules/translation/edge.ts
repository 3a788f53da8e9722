import type { ModuleEdgeHook } from '../edge'
import { TRANSLATION_LANGUAGES, type TranslationService } from './service'

const LANG_PREFIX = new RegExp(`^/(${TRANSLATION_LANGUAGES.join('|')})(/.*)$`)

/** Translation at the edge: a GET of `/{lang}/path` is the page at `/path`, translated (cached per page version). */
export function translationEdge(translation: Pick<TranslationService, 'page'>): ModuleEdgeHook {
  return {
    module: 'translation',
    answer: ({ request, path, site, visitor, forward }) => {
      if (request.method !== 'GET') return undefined
      const m = LANG_PREFIX.exec(path)
      if (!m) return undefined
      // The page at its path: the query string is not sent, so that one page is one translation.
      return translation.page(site, m[1]!, m[2]!, visitor, (p) => {
        const url = new URL(request.url)
        url.pathname = p
        url.search = ''
        return forward(new Request(url, { headers: request.headers }))
      })
    },
  }
}
