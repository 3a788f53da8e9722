import { decodeEntities } from '../chatbot/page-text'
import { scanHtml } from '../html-scan'

/**
 * The elements a page written by the model may have: a document's text, structure, links,
 * images and tables, and CSS. Nothing that runs code, loads a frame or an object, sends a form
 * or changes where the page's links go (`<base>`), and no SVG or MathML (which can do all that).
 */
const ELEMENTS = new Set(`
html head body title meta style
header footer main nav section article aside hgroup address
h1 h2 h3 h4 h5 h6 p div span br hr wbr blockquote q cite pre code kbd samp var
a strong em b i u s small mark sub sup abbr dfn time data del ins bdi bdo ruby rt rp
ul ol li dl dt dd figure figcaption picture source img
table caption colgroup col thead tbody tfoot tr th td details summary
`.trim().split(/\s+/))

/** Attributes it may have: presentation, accessibility, links and images; no `on*`, no `http-equiv`. */
const ATTRIBUTES = new Set(`
class id lang dir title style role hidden translate
charset name content property
href target rel hreflang src srcset sizes alt width height loading decoding media type
colspan rowspan headers scope span start reversed value datetime open
`.trim().split(/\s+/))
const URL_ATTRIBUTES = new Set(['href', 'src', 'cite'])
const SCHEMES = new Set(['http', 'https', 'mailto', 'tel'])

/**
 * Why a page the model wrote cannot be saved, or null when it can: an element or attribute not
 * in the lists above (`<script>`, `<iframe>`, `onerror=`, `http-equiv=` ...), or a URL with a
 * scheme other than http, https, mailto or tel (`javascript:`, `data:`), read as a browser reads
 * it (character references decoded, tabs and line breaks dropped).
 *
 * @example
 * refusedContent('<p><img src=x onerror=alert(1)></p>') // 'the attribute onerror (on <img>)'
 */
export function refusedContent(html: string): string | null {
  for (const token of scanHtml(html)) {
    if (token.kind !== 'tag' || token.closing) continue
    if (!ELEMENTS.has(token.name)) return `the element <${token.name}>`
    for (const a of token.attrs) {
      if (!ATTRIBUTES.has(a.name) && !a.name.startsWith('aria-') && !/^data-[a-z0-9-]+$/.test(a.name)) return `the attribute ${a.name} (on <${token.name}>)`
      const urls = a.name === 'srcset' ? a.value.split(',').map((c) => c.trim().split(/\s+/)[0] ?? '') : URL_ATTRIBUTES.has(a.name) ? [a.value] : []
      for (const url of urls) {
        if (!safeUrl(url)) return `the URL ${JSON.stringify(a.value.slice(0, 80))} (${a.name} on <${token.name}>)`
      }
    }
  }
  return null
}

/** A URL with no scheme (relative, `#`, `?`) or one of SCHEMES, as the browser will read it. */
function safeUrl(raw: string): boolean {
  const decoded = decodeEntities(raw)
  // A reference left (a name the decoder does not know, `&colon;`, or a number without its `;`,
  // `&#106`) could still make a scheme in a browser.
  if (/&(#|[A-Za-z][A-Za-z0-9]*;)/.test(decoded)) return false
  // eslint-disable-next-line no-control-regex
  const url = decoded.replace(/[\t\n\r]/g, '').replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '').toLowerCase()
  const scheme = /^([a-z][a-z0-9+.-]*):/.exec(url)?.[1]
  return scheme === undefined ? !/^[^/?#]*:/.test(url) : SCHEMES.has(scheme)
}
