/**
 * HTML split the way a browser's tokenizer splits it (WHATWG HTML, 13.2.5), for the modules that
 * must know what a browser will take as text and what as markup: the translation module puts the
 * model's words back only where the page had text, and the content module checks the tags and
 * attributes of a page the model wrote. One pass, linear in the page's length.
 *
 * What it follows, because getting it wrong would let text become markup:
 * - comments end at `-->`, `--!>`, and at once for `<!-->` and `<!--->`; `<!...>`, `<?...>` and
 *   `</ ...>` are bogus comments ending at the first `>`;
 * - a tag ends at the first `>` outside a quoted attribute value, quotes counting only right
 *   after `=`; a tag cut off by the end of the page is dropped, as browsers drop it;
 * - the contents of script, style, textarea, title, xmp, iframe, noembed, noframes and noscript
 *   are raw up to their own end tag, script's with its escaped states (`<!--` ... `<script>`
 *   inside it hide a `</script>`); plaintext runs to the end;
 * - inside `<svg>` and `<math>` (foreign content), `<![CDATA[...]]>` sections.
 * It does not build a tree: what is inside foreign content is marked, not interpreted.
 */

export interface HtmlAttr {
  /** Lower case, as written otherwise (`onclick`, `xlink:href`). */
  name: string
  /** As written, character references not decoded; '' when the attribute has no value. */
  value: string
  /** Where the value's characters are (quotes excluded); both at the name's end when it has none. */
  valueStart: number
  valueEnd: number
  /** The quote around the value, '' when unquoted, null when there is no value. */
  quote: '"' | "'" | '' | null
}

export type HtmlToken =
  | { kind: 'text'; start: number; end: number; foreign: boolean }
  /** A start or end tag; `attrs` in the order written (a start tag's only; browsers keep the first of a name). */
  | { kind: 'tag'; start: number; end: number; foreign: boolean; name: string; closing: boolean; selfClosing: boolean; attrs: HtmlAttr[] }
  /** The contents of a raw-text or RCDATA element (`element`), or of a CDATA section (`#cdata`). */
  | { kind: 'raw'; start: number; end: number; foreign: boolean; element: string }
  /** Never shown: comments, the doctype, bogus comments, processing instructions, a tag cut off at the end. */
  | { kind: 'hidden'; start: number; end: number; foreign: boolean }

/** Elements whose contents are not markup, up to their end tag. */
const RAW = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'iframe', 'noembed', 'noframes', 'noscript'])
const FOREIGN = new Set(['svg', 'math'])

const isAlpha = (c: string | undefined) => c !== undefined && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\f' || c === '\r'

/** Every token of `html`, in order, covering it without gaps. */
export function scanHtml(html: string): HtmlToken[] {
  const out: HtmlToken[] = []
  const n = html.length
  let textStart = 0
  let i = 0
  // The open <svg> or <math> and how deep it is nested in itself; null outside foreign content.
  let foreign: { name: string; depth: number } | null = null
  const flushText = (upTo: number) => {
    if (upTo > textStart) out.push({ kind: 'text', start: textStart, end: upTo, foreign: foreign !== null })
  }
  const push = (token: HtmlToken) => {
    flushText(token.start)
    out.push(token)
    i = textStart = token.end
  }
  while (i < n) {
    const lt = html.indexOf('<', i)
    if (lt < 0) break
    const next = html[lt + 1]
    const inForeign = foreign !== null
    if (next === '!') {
      if (html.startsWith('<!--', lt)) push({ kind: 'hidden', start: lt, end: commentEnd(html, lt + 4), foreign: inForeign })
      else if (inForeign && html.startsWith('<![CDATA[', lt)) {
        const close = html.indexOf(']]>', lt + 9)
        push({ kind: 'raw', start: lt, end: close < 0 ? n : close + 3, foreign: true, element: '#cdata' })
      } else push({ kind: 'hidden', start: lt, end: pastNext(html, '>', lt + 2), foreign: inForeign })
      continue
    }
    if (next === '?') {
      push({ kind: 'hidden', start: lt, end: pastNext(html, '>', lt + 2), foreign: inForeign })
      continue
    }
    const closing = next === '/'
    if (closing && !isAlpha(html[lt + 2])) {
      // `</>` is dropped, `</` at the very end is text, `</ ...>` is a bogus comment.
      if (html[lt + 2] === '>') push({ kind: 'hidden', start: lt, end: lt + 3, foreign: inForeign })
      else if (lt + 2 >= n) i = n
      else push({ kind: 'hidden', start: lt, end: pastNext(html, '>', lt + 2), foreign: inForeign })
      continue
    }
    if (!closing && !isAlpha(next)) {
      i = lt + 1 // a `<` that starts nothing is text
      continue
    }
    const tag = readTag(html, lt, closing)
    if (tag === null) {
      push({ kind: 'hidden', start: lt, end: n, foreign: inForeign })
      break
    }
    push({ ...tag, foreign: inForeign })
    if (closing) {
      if (foreign && tag.name === foreign.name && --foreign.depth === 0) foreign = null
      continue
    }
    if (tag.selfClosing && (foreign || FOREIGN.has(tag.name))) continue
    if (foreign) {
      if (tag.name === foreign.name) foreign.depth++
    } else if (FOREIGN.has(tag.name)) {
      foreign = { name: tag.name, depth: 1 }
      continue
    }
    if (tag.name === 'plaintext') {
      push({ kind: 'raw', start: i, end: n, foreign: foreign !== null, element: 'plaintext' })
      break
    }
    if (RAW.has(tag.name)) {
      const end = tag.name === 'script' ? scriptEnd(html, i) : endTagAt(html, tag.name, i)
      if (end > i) push({ kind: 'raw', start: i, end, foreign: foreign !== null, element: tag.name })
    }
  }
  flushText(n)
  return out
}

/** Just past the next `c` from `from`, or the end. */
function pastNext(s: string, c: string, from: number): number {
  const at = s.indexOf(c, from)
  return at < 0 ? s.length : at + 1
}

/** Just past a comment whose text starts at `from` (after `<!--`). */
function commentEnd(s: string, from: number): number {
  if (s[from] === '>') return from + 1 // <!-->
  if (s.startsWith('->', from)) return from + 2 // <!--->
  const a = s.indexOf('-->', from)
  const b = s.indexOf('--!>', from)
  if (a < 0 && b < 0) return s.length
  return a >= 0 && (b < 0 || a < b) ? a + 3 : b + 4
}

const END_TAGS = new Map([...RAW, 'script'].map((name) => [name, new RegExp(`</${name}(?=[\\t\\n\\f\\r />])`, 'gi')]))

/** Where `</name` followed by a space, `/` or `>` starts, from `from` (any case), else the end. */
function endTagAt(s: string, name: string, from: number): number {
  const re = END_TAGS.get(name)!
  re.lastIndex = from
  return re.exec(s)?.index ?? s.length
}

/**
 * Where a script's contents end: its `</script>`, except inside `<!--` where a `<script>` starts
 * a part in which `</script>` only goes back (script data escaped and double escaped states).
 */
function scriptEnd(s: string, from: number): number {
  const named = (at: number, prefix: string) => {
    if (s.slice(at, at + prefix.length).toLowerCase() !== prefix) return false
    const after = s[at + prefix.length]
    return after === '/' || after === '>' || (isSpace(after) && after !== undefined)
  }
  let state: 'data' | 'escaped' | 'double' = 'data'
  for (let k = s.indexOf('<', from); k >= 0 && k < s.length; k++) {
    const c = s[k]
    if (c === '<') {
      if (state !== 'double' && named(k, '</script')) return k
      if (state === 'data' && s.startsWith('<!--', k)) {
        state = 'escaped'
        k += 3
      } else if (state === 'escaped' && named(k, '<script')) {
        state = 'double'
        k += 6
      } else if (state === 'double' && named(k, '</script')) {
        state = 'escaped'
        k += 7
      }
    } else if (c === '>' && state !== 'data' && s[k - 1] === '-' && s[k - 2] === '-') {
      state = 'data'
    }
    if (state === 'data') {
      const lt = s.indexOf('<', k + 1)
      if (lt < 0) return s.length
      k = lt - 1
    }
  }
  return s.length
}

/**
 * The tag starting at `lt` (`<name` or `</name`): its name, attributes and end, following the
 * tokenizer's attribute states; null when the page ends inside it.
 */
function readTag(s: string, lt: number, closing: boolean): Omit<Extract<HtmlToken, { kind: 'tag' }>, 'foreign'> | null {
  const n = s.length
  let k = lt + (closing ? 2 : 1)
  const nameStart = k
  while (k < n && !isSpace(s[k]) && s[k] !== '/' && s[k] !== '>') k++
  const name = s.slice(nameStart, k).toLowerCase()
  const attrs: HtmlAttr[] = []
  let selfClosing = false
  for (;;) {
    while (k < n && isSpace(s[k])) k++
    if (k >= n) return null
    if (s[k] === '>') return { kind: 'tag', start: lt, end: k + 1, name, closing, selfClosing, attrs }
    if (s[k] === '/') {
      k++
      if (s[k] === '>') selfClosing = true
      continue
    }
    // An attribute's name: a leading `=` belongs to it.
    const attrStart = k
    k++
    while (k < n && !isSpace(s[k]) && s[k] !== '/' && s[k] !== '>' && s[k] !== '=') k++
    const attrName = s.slice(attrStart, k).toLowerCase()
    let j = k
    while (j < n && isSpace(s[j])) j++
    if (s[j] !== '=') {
      attrs.push({ name: attrName, value: '', valueStart: k, valueEnd: k, quote: null })
      k = j
      continue
    }
    j++
    while (j < n && isSpace(s[j])) j++
    if (j >= n) return null
    const q = s[j]
    if (q === '"' || q === "'") {
      const close = s.indexOf(q, j + 1)
      if (close < 0) return null
      attrs.push({ name: attrName, value: s.slice(j + 1, close), valueStart: j + 1, valueEnd: close, quote: q })
      k = close + 1
    } else if (q === '>') {
      attrs.push({ name: attrName, value: '', valueStart: j, valueEnd: j, quote: '' })
      k = j
    } else {
      let e = j
      while (e < n && !isSpace(s[e]) && s[e] !== '>') e++
      attrs.push({ name: attrName, value: s.slice(j, e), valueStart: j, valueEnd: e, quote: '' })
      k = e
    }
  }
}
