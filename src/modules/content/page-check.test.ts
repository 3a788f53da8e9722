import { describe, expect, it } from 'vitest'
import { refusedContent } from './page-check'

const page = (body: string, head = '') =>
  `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Tours</title><meta name="description" content="Tours">${head}</head><body><h1>Tours</h1>${body}</body></html>`

describe('refusedContent', () => {
  it('accepts a plain page: text, CSS, links, images, tables, ARIA and data attributes', () => {
    const body = `<nav aria-label="Main"><a href="/">Home</a> <a href="https://example.com/x?a=1&amp;b=2#top" target="_blank" rel="noopener">Out</a> <a href="mailto:a@example.com">Mail</a> <a href="#faq">FAQ</a></nav>
<main class="wrap" data-section="tours"><p style="color: #333">Evening tours &amp; more.</p>
<picture><source srcset="/a.webp 1x, /a@2x.webp 2x" type="image/webp"><img src="img/a.jpg" alt="A" width="300" loading="lazy"></picture>
<table><tr><th scope="col">Day</th><td colspan="2">Mon</td></tr></table><details open><summary>More</summary><p>Text</p></details></main><!-- a comment -->`
    expect(refusedContent(page(body, '<style>body { font: 16px serif }</style>'))).toBeNull()
  })

  it.each([
    ['<script>alert(1)</script>', 'the element <script>'],
    ['<SCRIPT src="https://evil.example/x.js"></SCRIPT>', 'the element <script>'],
    ['<img src=x onerror=alert(1)>', 'the attribute onerror (on <img>)'],
    ['<p onclick="steal()">Hi</p>', 'the attribute onclick (on <p>)'],
    ['<a href="javascript:alert(1)">x</a>', 'the URL'],
    ['<a href=" JaVa\tScRiPt:alert(1)">x</a>', 'the URL'],
    ['<a href="&#106;avascript:alert(1)">x</a>', 'the URL'],
    ['<a href="&#106avascript&#58alert(1)">x</a>', 'the URL'],
    ['<a href="javascript&colon;alert(1)">x</a>', 'the URL'],
    ['<img src="data:text/html,<script>alert(1)</script>">', 'the URL'],
    ['<img srcset="/ok.png 1x, javascript:alert(1) 2x">', 'the URL'],
    ['<iframe src="https://evil.example"></iframe>', 'the element <iframe>'],
    ['<svg onload=alert(1)></svg>', 'the element <svg>'],
    ['<form action="https://evil.example"><input name=card></form>', 'the element <form>'],
    ['<base href="https://evil.example/">', 'the element <base>'],
    ['<!--><script>alert(1)</script>-->', 'the element <script>'],
  ])('refuses %s', (body, reason) => {
    expect(refusedContent(page(body))).toContain(reason)
  })

  it('refuses a refresh to elsewhere in the head', () => {
    expect(refusedContent(page('', '<meta http-equiv="refresh" content="0;url=https://evil.example">'))).toContain('http-equiv')
  })
})
