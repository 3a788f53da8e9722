/**
 * Visitors' questions to the chatbot's index (site-index.ts): the words worth searching for, as
 * FTS5 terms no input can turn into FTS5 syntax, and the snippet of a passage that shows them.
 */

/** Words that say nothing about what is asked, English and French, accents removed. */
const STOP_WORDS = new Set(`
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did didn do does doesn doing don down during each few for from further get got had has
have having he hello her here hers herself hey hi him himself his how if in into is isn it its itself just me
more most my myself no nor not now of off on once only or other our ours ourselves out over own please same she
should so some such tell than thank thanks that the their theirs them themselves then there these they this those
through to too under until up very was wasn we were what when where which while who whom why will with would you
your yours yourself yourselves
ai au aux avec avez avoir avons bonjour ca ce ceci cela ces cet cette comment dans de des du elle elles en est
et etait ete etre eux fait faire ici il ils je la le les leur leurs lui ma mais me meme merci mes moi mon ne nos
notre nous on ont ou par pas peut peux pour pourquoi pouvez qu quand que quel quelle quelles quels qui sa se ses
son sont sur svp ta te tes toi ton tu un une vos votre vous y
`.trim().split(/\s+/))
const MAX_QUESTION_CHARS = 4000
const MAX_TERMS = 16
const MAX_TERM_CHARS = 64
const SNIPPET_CHARS = 160

/** One word of a question: as FTS5 will match it, and folded (lower case, no accents) for snippets. */
export interface Term {
  match: string
  folded: string
}

/**
 * A question's words: letters, digits and marks only, so no FTS5 syntax survives; stop words,
 * one-letter words and repeats dropped; each quoted, prefix-matched from 4 characters.
 */
export function questionTerms(question: string): Term[] {
  const words = question.slice(0, MAX_QUESTION_CHARS).normalize('NFC').toLowerCase().match(/[\p{L}\p{N}\p{M}]+/gu) ?? []
  const terms = new Map<string, Term>()
  for (const word of words) {
    const folded = fold(word)
    if (folded.length < 2 || word.length > MAX_TERM_CHARS || STOP_WORDS.has(folded) || terms.has(folded)) continue
    terms.set(folded, { match: folded.length >= 4 ? `"${word}"*` : `"${word}"`, folded })
    if (terms.size === MAX_TERMS) break
  }
  return [...terms.values()]
}

/**
 * The FTS5 query `search` runs last for a question, or null when no word is left: its terms
 * OR-ed, `"booking"* OR "table"* OR "paris"*`. Safe for any input.
 */
export function toMatchQuery(question: string): string | null {
  const terms = questionTerms(question)
  return terms.length === 0 ? null : terms.map((t) => t.match).join(' OR ')
}

function fold(s: string): string {
  return s.normalize('NFD').replace(/\p{M}+/gu, '').toLowerCase()
}

/**
 * About SNIPPET_CHARS of `passage` where most of the question's words are (a word matches when it
 * starts with a term, accents and case ignored as in the index), cut between words, `…` where
 * text was left out.
 */
export function snippetOf(passage: string, terms: Term[]): string {
  // The folded passage, and for each of its characters the index of the original one.
  let folded = ''
  const origin: number[] = []
  for (let i = 0; i < passage.length; i++) {
    const c = passage[i]!
    const f = c < '\u0080' ? c.toLowerCase() : fold(c)
    folded += f
    for (let k = 0; k < f.length; k++) origin.push(i)
  }
  const hits: [at: number, term: number][] = []
  for (const [t, { folded: term }] of terms.entries()) {
    for (let i = folded.indexOf(term); i >= 0; i = folded.indexOf(term, i + 1)) {
      if (i === 0 || !/[\p{L}\p{N}]/u.test(folded[i - 1]!)) hits.push([origin[i]!, t])
    }
  }
  hits.sort((a, b) => a[0] - b[0])
  // The window starting at a hit that holds the most different terms; the first such.
  let center = 0
  let most = 0
  for (const [i, [at]] of hits.entries()) {
    const within = new Set(hits.slice(i).filter(([other]) => other - at < (SNIPPET_CHARS * 2) / 3).map(([, t]) => t)).size
    if (within > most) [center, most] = [at, within]
  }
  let start = Math.max(0, center - SNIPPET_CHARS / 3)
  let end = Math.min(passage.length, start + SNIPPET_CHARS)
  start = Math.max(0, end - SNIPPET_CHARS)
  if (start > 0) start = passage.indexOf(' ', start) + 1 || start
  if (end < passage.length) end = passage.lastIndexOf(' ', end) > start ? passage.lastIndexOf(' ', end) : end
  const text = passage.slice(start, end).replace(/\s+/g, ' ').trim()
  return (start > 0 ? '…' : '') + text + (end < passage.length ? '…' : '')
}
