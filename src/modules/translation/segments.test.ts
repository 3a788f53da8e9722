import { describe, expect, it } from 'vitest'
import { scanHtml } from '../html-scan'
import { pageTexts } from './segments'

/** The page's markup with its texts taken out: tags (names and attributes), comments, raw contents. */
const structure = (html: string) =>
  scanHtml(html)
    .filter((t) => t.kind !== 'text')
    .map((t) => (t.kind === 'tag' ? `${t.closing ? '/' : ''}${t.name}[${t.attrs.map((a) => a.name).join(',')}]` : t.kind === 'raw' && t.element === 'title' ? 'title-text' : html.slice(t.start, t.end)))

/** What a hostile (or confused) model might answer for every text. */
const PAYLOADS = [
  '<script>window.__pwned = 1</script>',
  '<img src=x onerror="window.__pwned = 1">',
  '"><img src=x onerror=alert(1)>',
  "' onmouseover='alert(1)",
  '<a href="javascript:alert(1)">click</a>',
  '</title><script>alert(1)</script>',
  '<!--',
  ']]><svg onload=alert(1)>',
]

describe('pageTexts', () => {
  it('finds the texts a visitor reads, each once, and nothing in scripts, styles, comments or SVG', () => {
    const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>Harbour Bakery</title>
<meta name="description" content="Fresh bread every day">
<style>p::before { content: "Not text" }</style>
<script>const s = "<p>Not text</p>"; if (a < b) {}</script></head>
<body><!-- Not text --><h1>Fresh bread every day</h1>
<p>Open at <b>seven</b> &amp; closed on Mondays.</p>
<img src="/loaf.jpg" alt="A loaf"><input placeholder='Your name' type="text">
<svg><text>Not text</text></svg><textarea>Not text</textarea>
<p title=Unquoted>1 2 3</p></body></html>`
    const page = pageTexts(html)
    expect(page.texts).toEqual(['Harbour Bakery', 'Fresh bread every day', 'Open at', 'seven', '&amp; closed on Mondays.', 'A loaf', 'Your name', 'Unquoted'])
    expect(page.texts.join(' ')).not.toContain('Not text')
  })

  it('puts translations back escaped: the markup is the same whatever the model answers', () => {
    const html = `<!doctype html><html lang="en"><head><title>Harbour Bakery</title><meta name="description" content='Fresh bread'></head>
<body><h1 title="Welcome">Welcome</h1><p>Fresh bread</p><img alt="A loaf" src="/loaf.jpg"><p>Open daily</p></body></html>`
    const page = pageTexts(html)
    for (const payload of PAYLOADS) {
      const out = page.rebuild(page.texts.map(() => payload), 'fr')
      expect(structure(out)).toEqual(structure(html))
      expect(out).not.toMatch(/<script>alert|<script>window|<img src=x|<a href="javascript/)
      expect(out).toContain('<html lang="fr">')
    }
    // And what it answers is there, as text.
    const out = page.rebuild(page.texts.map((t) => `${t} (fr) <b>&`), 'fr')
    expect(out).toContain('<h1 title="Welcome (fr) &lt;b&gt;&">Welcome (fr) &lt;b&gt;&</h1>')
    expect(out).toContain(`<meta name="description" content="Fresh bread (fr) &lt;b&gt;&">`)
  })

  it('keeps the original text where the answer is not a string, and sets or adds lang', () => {
    const page = pageTexts('<html><body><p>One</p><p>Two</p></body></html>')
    expect(page.rebuild(['Un', 42], 'fr')).toBe('<html lang="fr"><body><p>Un</p><p>Two</p></body></html>')
    expect(pageTexts(`<HTML LANG=en><p>x y</p>`).rebuild(['a b'], 'de')).toBe('<HTML LANG="de"><p>a b</p>')
    expect(pageTexts(`<p>no html tag</p>`).rebuild(['pas de balise'], 'fr')).toBe('<p>pas de balise</p>')
  })

  it('never takes what a browser reads as script for text (escaped script data, comment tricks)', () => {
    const cases = [
      // Inside <!-- ... <script>, a </script> does not end the script: "Hello" is still script.
      '<script><!--<script></script> Hello world </script><p>Shown</p>',
      // <!--> is an empty comment: the script after it is a script.
      '<!--><script>Hello world</script><p>Shown</p>',
      '<!---><script>Hello world</script><p>Shown</p>',
      // --!> ends a comment.
      '<!-- x --!><script>Hello world</script><p>Shown</p>',
      // A > inside a quoted attribute does not end the tag.
      '<p data-note="a > b"><script>Hello world</script>Shown</p>',
      '<SCRIPT type="module">Hello world</SCRIPT ><p>Shown</p>',
    ]
    for (const html of cases) expect(pageTexts(html).texts, html).toEqual(['Shown'])
  })
})

describe('scanHtml', () => {
  it('covers the page without gaps and ends tags where browsers do', () => {
    const html = `a<b c="1>2" d='x' e=f g>h</b ><!---->i<? pi ?>j</ bogus>k<3 and </>l<p/><svg><![CDATA[ <p>m</p> ]]></svg>`
    const tokens = scanHtml(html)
    let at = 0
    for (const t of tokens) {
      expect(t.start).toBe(at)
      at = t.end
    }
    expect(at).toBe(html.length)
    const b = tokens.find((t) => t.kind === 'tag' && t.name === 'b' && !t.closing)!
    expect(b.kind === 'tag' && b.attrs.map((a) => [a.name, a.value, a.quote])).toEqual([['c', '1>2', '"'], ['d', 'x', "'"], ['e', 'f', ''], ['g', '', null]])
    const texts = tokens.filter((t) => t.kind === 'text').map((t) => html.slice(t.start, t.end))
    expect(texts).toEqual(['a', 'h', 'i', 'j', 'k<3 and ', 'l'])
    expect(tokens.some((t) => t.kind === 'raw' && t.element === '#cdata' && t.foreign)).toBe(true)
  })

  it('drops a tag the page cuts off, as browsers do', () => {
    const tokens = scanHtml('<p>text<img src="x onerror=alert(1)>')
    expect(tokens.at(-1)).toMatchObject({ kind: 'hidden' })
  })
})
