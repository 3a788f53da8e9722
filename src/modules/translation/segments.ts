import { scanHtml, type HtmlAttr } from '../html-scan'

/** Attributes whose words a visitor reads (or hears), on any element. */
const WORDY_ATTRS = new Set(['alt', 'title', 'placeholder', 'aria-label'])
/** `<meta name|property=...>` whose `content` is words. */
const WORDY_META = new Set(['description', 'og:title', 'og:description', 'twitter:title', 'twitter:description'])
const HAS_WORDS = /\p{L}/u

/** Where one text goes back into the page. */
interface Slot {
  start: number
  end: number
  /** Index into `texts`. */
  text: number
  /** An attribute's value (written back double-quoted, quotes replaced), or a text node. */
  attr: boolean
}

/**
 * A page taken apart for translation: the texts a visitor reads (text nodes, the title, `alt`,
 * `title`, `placeholder`, `aria-label`, meta description), each once, and everything else kept
 * as it is. `rebuild` puts translations back into the page's own markup, escaped, so whatever the
 * model answers can only ever be text: no element, attribute or URL is added or changed.
 *
 * @example
 * const page = pageTexts('<p>Fresh bread</p>')
 * page.texts // ['Fresh bread']
 * page.rebuild(['<b>Pain</b> frais'], 'fr') // '<p>&lt;b&gt;Pain&lt;/b&gt; frais</p>'
 */
export interface PageTexts {
  /** The distinct texts, as written in the page (character references not decoded). */
  texts: string[]
  /** The page with `translated[i]` in place of `texts[i]` (the original where it is not a string), and `<html lang>` set to `lang`. */
  rebuild(translated: readonly unknown[], lang: string): string
}

export function pageTexts(html: string): PageTexts {
  const texts: string[] = []
  const indexOf = new Map<string, number>()
  const slots: Slot[] = []
  /** Where `<html` ends and its `lang` value, to set the language. */
  let htmlTag: { nameEnd: number; lang: HtmlAttr | null } | null = null
  const add = (start: number, end: number, attr: boolean) => {
    const text = html.slice(start, end)
    if (!HAS_WORDS.test(text)) return
    let index = indexOf.get(text)
    if (index === undefined) {
      index = texts.push(text) - 1
      indexOf.set(text, index)
    }
    slots.push({ start, end, text: index, attr })
  }
  const addTrimmed = (start: number, end: number) => {
    while (start < end && /\s/.test(html[start]!)) start++
    while (end > start && /\s/.test(html[end - 1]!)) end--
    if (end > start) add(start, end, false)
  }
  for (const token of scanHtml(html)) {
    // Inside <svg> and <math> nothing is touched: what a browser takes for text there is not certain.
    if (token.foreign) continue
    if (token.kind === 'text') addTrimmed(token.start, token.end)
    else if (token.kind === 'raw' && token.element === 'title') addTrimmed(token.start, token.end)
    else if (token.kind === 'tag' && !token.closing) {
      const first = firstOfEach(token.attrs)
      if (token.name === 'html' && htmlTag === null) htmlTag = { nameEnd: token.start + 5, lang: first.get('lang') ?? null }
      for (const name of WORDY_ATTRS) {
        const a = first.get(name)
        if (a && a.quote !== null) add(a.valueStart, a.valueEnd, true)
      }
      const content = first.get('content')
      const kind = (first.get('name') ?? first.get('property'))?.value.toLowerCase()
      if (token.name === 'meta' && content && content.quote !== null && kind && WORDY_META.has(kind)) add(content.valueStart, content.valueEnd, true)
    }
  }
  return {
    texts,
    rebuild(translated, lang) {
      const edits = slots.map((slot) => {
        const t = translated[slot.text]
        const words = typeof t === 'string' && t.trim() ? t : texts[slot.text]!
        return slot.attr ? attrEdit(html, slot.start, slot.end, words) : { start: slot.start, end: slot.end, with: escapeText(words) }
      })
      if (htmlTag) edits.push(langEdit(html, htmlTag, lang))
      edits.sort((a, b) => a.start - b.start)
      let out = ''
      let at = 0
      for (const e of edits) {
        out += html.slice(at, e.start) + e.with
        at = e.end
      }
      return out + html.slice(at)
    },
  }
}

/** Each attribute name's first occurrence: browsers ignore the later ones. */
function firstOfEach(attrs: HtmlAttr[]): Map<string, HtmlAttr> {
  const first = new Map<string, HtmlAttr>()
  for (const a of attrs) if (!first.has(a.name)) first.set(a.name, a)
  return first
}

/** A text node's words: no `<` or `>` can open a tag (`&` stays: a reference only ever makes text). */
export function escapeText(s: string): string {
  return s.replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/** An attribute value, double-quoted: no quote can end it early. */
export function escapeAttr(s: string): string {
  return s.replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/** The value between `start` and `end` replaced by `words`, with its quotes made double. */
function attrEdit(html: string, start: number, end: number, words: string): { start: number; end: number; with: string } {
  const quoted = html[start - 1] === '"' || html[start - 1] === "'"
  return { start: quoted ? start - 1 : start, end: quoted ? end + 1 : end, with: `"${escapeAttr(words)}"` }
}

/** `<html lang>` set to `lang` (one of the module's language codes), added when missing. */
function langEdit(html: string, tag: { nameEnd: number; lang: HtmlAttr | null }, lang: string): { start: number; end: number; with: string } {
  const a = tag.lang
  if (a === null) return { start: tag.nameEnd, end: tag.nameEnd, with: ` lang="${lang}"` }
  if (a.quote === null) return { start: a.valueEnd, end: a.valueEnd, with: `="${lang}"` }
  const quoted = a.quote !== ''
  return { start: quoted ? a.valueStart - 1 : a.valueStart, end: quoted ? a.valueEnd + 1 : a.valueEnd, with: `"${lang}"` }
}
