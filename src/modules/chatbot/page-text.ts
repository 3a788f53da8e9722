/**
 * The text of a site's page for the chatbot's index (site-index.ts): HTML, Markdown or plain
 * text turned into a title and passages of PASSAGE_MIN to PASSAGE_MAX characters. Every scan is
 * linear in the page's length: a hostile page can make its own indexing slow, never quadratic.
 */
import { extname } from 'node:path'

/** Passages are cut to between these lengths, in characters, at sentence ends where possible. */
export const PASSAGE_MIN = 500
export const PASSAGE_MAX = 800

/**
 * The URL path a file is served at: `index.html` → `/`, `about/index.html` → `/about/`,
 * `blog/post.html` → `/blog/post.html` (`rel` is relative to public/, with `/` separators).
 */
export function pageUrl(rel: string): string {
  const parts = rel.split('/')
  if (/^index\.html?$/.test(parts.at(-1)!)) parts[parts.length - 1] = ''
  return '/' + parts.map(encodeURIComponent).join('/')
}

/** A file's URL, title and passages. UTF-8, or Windows-1252 when the bytes are not valid UTF-8. */
export function extractPage(rel: string, bytes: Uint8Array, maxPassages = Infinity): { url: string; title: string; passages: string[] } {
  let source: string
  try {
    source = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    source = new TextDecoder('windows-1252').decode(bytes)
  }
  source = source.normalize('NFC')
  const url = pageUrl(rel)
  const ext = extname(rel).toLowerCase()
  const { title, text } = ext === '.md' ? markdownToText(source) : ext === '.txt' ? { title: '', text: source } : htmlToText(source)
  const passages = splitPassages(paragraphs(text)).slice(0, maxPassages)
  // A page with a title and no text can still be found by its title.
  return { url, title: title || url, passages: passages.length > 0 ? passages : [''] }
}

/** Elements whose content is never shown as text. */
const HIDDEN = ['script', 'style', 'noscript', 'template', 'title']
const HIDDEN_END = new Map(HIDDEN.map((name) => [name, new RegExp(`</${name}(?=[\\s/>])`, 'gi')]))
/** Tags that start a new paragraph; other tags join words (inline) or separate them (the rest). */
const BLOCK = new Set('address article aside blockquote body dd details dialog div dl dt fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 head header hr html li main nav ol p pre section summary table tbody thead tfoot tr ul'.split(' '))
const INLINE = new Set('a abbr b bdi bdo cite code data del dfn em font i ins kbd mark q s samp small span strong sub sup time u var wbr'.split(' '))
const TAG_START = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)/y

/**
 * The visible text of an HTML page, paragraphs separated by blank lines, and its title (the
 * first `<title>`, else the first `<h1>`). One pass, linear in the page's length.
 */
export function htmlToText(html: string): { title: string; text: string } {
  let out = ''
  let title = ''
  let h1 = ''
  let h1Start = -1
  let i = 0
  while (i < html.length) {
    const lt = html.indexOf('<', i)
    if (lt < 0) {
      out += html.slice(i)
      break
    }
    out += html.slice(i, lt)
    if (html.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4)
      i = end < 0 ? html.length : end + 3
      continue
    }
    if (html[lt + 1] === '!' || html[lt + 1] === '?') {
      const end = html.indexOf('>', lt + 2) // <!doctype ...>, <?xml ...?>
      i = end < 0 ? html.length : end + 1
      continue
    }
    TAG_START.lastIndex = lt
    const tag = TAG_START.exec(html)
    if (!tag) {
      out += '<'
      i = lt + 1
      continue
    }
    const closing = tag[1] === '/'
    const name = tag[2]!.toLowerCase()
    i = tagEnd(html, lt + tag[0].length)
    const hiddenEnd = closing ? undefined : HIDDEN_END.get(name)
    if (hiddenEnd) {
      hiddenEnd.lastIndex = i
      const end = hiddenEnd.exec(html)
      if (name === 'title' && !title) title = collapse(decodeEntities(html.slice(i, end ? end.index : html.length)))
      i = end ? tagEnd(html, end.index + end[0].length) : html.length
      out += ' '
      continue
    }
    if (name === 'h1' && !closing && h1Start < 0 && !h1) h1Start = out.length
    if (name === 'h1' && closing && h1Start >= 0) {
      h1 = collapse(decodeEntities(out.slice(h1Start)))
      h1Start = -1
    }
    out += BLOCK.has(name) ? '\n\n' : name === 'br' ? '\n' : INLINE.has(name) ? '' : ' '
  }
  return { title: title || h1, text: decodeEntities(out) }
}

/** The index just past the `>` closing a tag whose attributes start at `from` (quotes respected). */
function tagEnd(s: string, from: number): number {
  let quote = ''
  let previous = ''
  for (let j = from; j < s.length; j++) {
    const c = s[j]!
    if (quote) {
      if (c === quote) quote = ''
    } else if (c === '>') {
      return j + 1
    } else if ((c === '"' || c === "'") && previous === '=') {
      quote = c
    }
    if (c !== ' ' && c !== '\t' && c !== '\n' && c !== '\r') previous = c
  }
  return s.length
}

/** Markdown as text: headings' marks, link targets and images' addresses dropped. */
function markdownToText(md: string): { title: string; text: string } {
  const title = /^#[ \t]+(.{1,300})$/m.exec(md)?.[1]?.replace(/#+\s*$/, '').trim() ?? ''
  // Bounded repetitions only: a page full of `[` must not make these quadratic.
  const text = md
    .replace(/^[ \t]{0,3}#{1,6}[ \t]+/gm, '')
    .replace(/!?\[([^\]\n]{0,300})\]\([^)\s]{0,2000}(?:[ \t]+"[^"\n]{0,300}")?\)/g, '$1')
    .replace(/<[^<>\n]{1,300}>/g, ' ')
  return { title: collapse(title), text }
}

const ENTITIES: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', shy: '', copy: '©', reg: '®', trade: '™',
  hellip: '…', mdash: '—', ndash: '–', lsquo: '‘', rsquo: '’', sbquo: '‚', ldquo: '“', rdquo: '”', bdquo: '„',
  laquo: '«', raquo: '»', middot: '·', bull: '•', euro: '€', pound: '£', yen: '¥', cent: '¢', deg: '°', times: '×',
  agrave: 'à', aacute: 'á', acirc: 'â', atilde: 'ã', auml: 'ä', aring: 'å', aelig: 'æ', ccedil: 'ç', egrave: 'è',
  eacute: 'é', ecirc: 'ê', euml: 'ë', igrave: 'ì', iacute: 'í', icirc: 'î', iuml: 'ï', ntilde: 'ñ', ograve: 'ò',
  oacute: 'ó', ocirc: 'ô', otilde: 'õ', ouml: 'ö', oslash: 'ø', oelig: 'œ', ugrave: 'ù', uacute: 'ú', ucirc: 'û',
  uuml: 'ü', yacute: 'ý', yuml: 'ÿ', szlig: 'ß', Agrave: 'À', Aacute: 'Á', Acirc: 'Â', Auml: 'Ä', Ccedil: 'Ç',
  Egrave: 'È', Eacute: 'É', Ecirc: 'Ê', Euml: 'Ë', Icirc: 'Î', Iuml: 'Ï', Ocirc: 'Ô', Ouml: 'Ö', OElig: 'Œ',
  Ugrave: 'Ù', Ucirc: 'Û', Uuml: 'Ü',
}

/** Named (the common ones), decimal and hexadecimal character references; unknown ones stay as written. */
export function decodeEntities(s: string): string {
  return s.replace(/&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z]{2,8}));/g, (whole, dec?: string, hex?: string, name?: string) => {
    if (name !== undefined) return ENTITIES[name] ?? whole
    const code = dec !== undefined ? Number(dec) : parseInt(hex!, 16)
    const valid = code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff)
    return valid ? String.fromCodePoint(code) : '\uFFFD'
  })
}

function collapse(s: string): string {
  return s.replace(/\s+/g, ' ').trim()
}

/** Lines with text, grouped into paragraphs at blank lines, whitespace collapsed. */
function paragraphs(text: string): string[] {
  const out: string[] = []
  let current: string[] = []
  for (const line of text.split('\n')) {
    const words = collapse(line)
    if (words) current.push(words)
    else if (current.length > 0) {
      out.push(current.join(' '))
      current = []
    }
  }
  if (current.length > 0) out.push(current.join(' '))
  return out
}

/**
 * Passages of PASSAGE_MIN to PASSAGE_MAX characters: paragraphs are joined until one reaches the
 * minimum, and a passage that would pass the maximum is cut at a sentence end (a sentence longer
 * than the maximum, at a space). Only a page's last passage, or one followed by a long sentence,
 * may be shorter.
 */
export function splitPassages(paras: string[]): string[] {
  const out: string[] = []
  let buffer = ''
  for (const para of paras) {
    const units = sentences(para)
    for (const [k, unit] of units.entries()) {
      if (buffer && buffer.length + 1 + unit.length > PASSAGE_MAX) {
        out.push(buffer)
        buffer = ''
      }
      buffer = buffer ? buffer + (k === 0 ? '\n' : ' ') + unit : unit
      if (k === units.length - 1 && buffer.length >= PASSAGE_MIN) {
        out.push(buffer)
        buffer = ''
      }
    }
  }
  if (buffer) out.push(buffer)
  return out
}

const SENTENCE_END = new Set(['.', '!', '?', '…', '。', '！', '？'])
const CLOSERS = new Set(['"', "'", '»', '”', '’', ')', ']'])

/** A paragraph's sentences (split after . ! ? … and closing quotes, at a space), none over PASSAGE_MAX. */
function sentences(para: string): string[] {
  const out: string[] = []
  let start = 0
  for (let i = 1; i < para.length; i++) {
    if (para[i] !== ' ') continue
    let j = i - 1
    while (j > start && CLOSERS.has(para[j]!)) j--
    if (SENTENCE_END.has(para[j]!)) {
      out.push(para.slice(start, i))
      start = i + 1
    }
  }
  if (start < para.length) out.push(para.slice(start))
  return out.flatMap(cutLong)
}

function cutLong(sentence: string): string[] {
  const out: string[] = []
  let rest = sentence
  while (rest.length > PASSAGE_MAX) {
    const space = rest.lastIndexOf(' ', PASSAGE_MAX)
    const cut = space > PASSAGE_MAX / 2 ? space : PASSAGE_MAX
    out.push(rest.slice(0, cut))
    rest = rest.slice(cut).trimStart()
  }
  if (rest) out.push(rest)
  return out
}
