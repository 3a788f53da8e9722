/**
 * The head tags the seo module adds to a site's HTML pages when the page lacks them
 * (design.md, AI modules): `<title>`, meta description, canonical link and OpenGraph tags. A tag
 * the page has is never touched; the page's own words fill the new ones (its first heading and
 * paragraph). Pure string work on the page's head and the start of its body.
 */

/** What the head of a page already has, and what its body offers to fill the gaps. */
export interface PageFacts {
  title: string | null
  description: string | null
  canonical: boolean
  ogTitle: boolean
  ogDescription: boolean
  ogUrl: boolean
  ogType: boolean
  firstHeading: string | null
  firstParagraph: string | null
}

const TITLE = /<title\b[^>]*>([\s\S]*?)<\/title\s*>/i
const META = /<meta\b[^>]*>/gi
const LINK = /<link\b[^>]*>/gi
const H1 = /<h1\b[^>]*>([\s\S]*?)<\/h1\s*>/i
const P = /<p\b[^>]*>([\s\S]*?)<\/p\s*>/i

const attr = (tag: string, name: string): string | null => {
  const m = new RegExp(`\\b${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i').exec(tag)
  return m ? (m[1] ?? m[2] ?? m[3] ?? '') : null
}

/** Tags and entities out, whitespace collapsed. */
export function textOf(fragment: string): string {
  return decodeEntities(fragment.replace(/<(script|style|noscript|template)\b[\s\S]*?<\/\1\s*>/gi, ' ').replace(/<[^>]*>/g, ' ')).replace(/\s+/g, ' ').trim()
}

export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos|nbsp);/gi, (_, e: string) => {
    const k = e.toLowerCase()
    if (k === 'amp') return '&'
    if (k === 'lt') return '<'
    if (k === 'gt') return '>'
    if (k === 'quot') return '"'
    if (k === 'apos') return "'"
    if (k === 'nbsp') return ' '
    const code = k.startsWith('#x') ? Number.parseInt(k.slice(2), 16) : Number.parseInt(k.slice(1), 10)
    return code > 0 && code < 0x110000 ? String.fromCodePoint(code) : ''
  })
}

const escapeAttr = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

export function factsOf(head: string, body: string): PageFacts {
  const facts: PageFacts = {
    title: null, description: null, canonical: false, ogTitle: false, ogDescription: false, ogUrl: false, ogType: false,
    firstHeading: null, firstParagraph: null,
  }
  const title = TITLE.exec(head)
  if (title) facts.title = textOf(title[1]!) || null
  for (const tag of head.match(META) ?? []) {
    const name = (attr(tag, 'name') ?? '').toLowerCase()
    const property = (attr(tag, 'property') ?? '').toLowerCase()
    if (name === 'description') facts.description = attr(tag, 'content')
    if (property === 'og:title') facts.ogTitle = true
    if (property === 'og:description') facts.ogDescription = true
    if (property === 'og:url') facts.ogUrl = true
    if (property === 'og:type') facts.ogType = true
  }
  for (const tag of head.match(LINK) ?? []) {
    if ((attr(tag, 'rel') ?? '').toLowerCase().split(/\s+/).includes('canonical')) facts.canonical = true
  }
  const h1 = H1.exec(body)
  if (h1) facts.firstHeading = textOf(h1[1]!) || null
  const p = P.exec(body)
  if (p) facts.firstParagraph = textOf(p[1]!) || null
  return facts
}

/** Shortens text to `max` characters at a word boundary, with an ellipsis when cut. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text
  const cut = text.slice(0, max - 1)
  const space = cut.lastIndexOf(' ')
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).trimEnd()}…`
}

/** The tags to add for a page at `url`, given what it has; empty when it lacks nothing. */
export function missingTags(facts: PageFacts, url: string, fallbackTitle: string): string {
  const title = facts.title ?? facts.firstHeading ?? fallbackTitle
  const description = facts.description ?? (facts.firstParagraph ? clip(facts.firstParagraph, 155) : null)
  const tags: string[] = []
  if (!facts.title) tags.push(`<title>${escapeAttr(title)}</title>`)
  if (facts.description === null && description) tags.push(`<meta name="description" content="${escapeAttr(description)}">`)
  if (!facts.canonical) tags.push(`<link rel="canonical" href="${escapeAttr(url)}">`)
  if (!facts.ogTitle) tags.push(`<meta property="og:title" content="${escapeAttr(title)}">`)
  if (!facts.ogDescription && description) tags.push(`<meta property="og:description" content="${escapeAttr(description)}">`)
  if (!facts.ogUrl) tags.push(`<meta property="og:url" content="${escapeAttr(url)}">`)
  if (!facts.ogType) tags.push('<meta property="og:type" content="website">')
  return tags.length ? `${tags.join('')}` : ''
}

/** Where a page's head ends (the index of `</head>`), or -1. */
export const headEnd = (html: string): number => html.search(/<\/head\s*>/i)
