import { factsOf, headEnd, missingTags } from './head'

/** What to add to the HTML pages of a site: the seo module's tags, the chatbot's widget, or both. */
export interface PageAdditions {
  /** The seo module: the page's absolute URL (canonical, og:url) and a title when it has none. */
  seo: { url: string; fallbackTitle: string } | null
  /** The chatbot module: markup for the end of the head (its deferred script). */
  widget: string | null
}

/** The markup to put before `</head>` of a page whose head is `head` and whose body starts with `bodyStart`. */
export function additionsFor(head: string, bodyStart: string, add: PageAdditions): string {
  let extra = ''
  if (add.seo) extra += missingTags(factsOf(head, bodyStart), add.seo.url, add.seo.fallbackTitle)
  if (add.widget && !head.includes(add.widget)) extra += add.widget
  return extra
}

/**
 * The page with the additions put before its `</head>`; null when there is nothing to add or no
 * head to add it to (a fragment, a page without `</head>` in its first `scanLimit` characters):
 * such a page goes out untouched.
 */
export function rewritePage(html: string, add: PageAdditions, scanLimit = 256 * 1024): string | null {
  const end = headEnd(html.length > scanLimit ? html.slice(0, scanLimit) : html)
  if (end === -1) return null
  const extra = additionsFor(html.slice(0, end), html.slice(end, end + 64 * 1024), add)
  return extra ? html.slice(0, end) + extra + html.slice(end) : null
}
