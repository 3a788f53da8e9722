/** Text made safe for HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** Markup already escaped (the result of `html`), inserted as is by `html`. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

/**
 * A template tag for HTML: every interpolated value is escaped unless it is `Html` (from another
 * `html` call); arrays are joined. Pages built with it cannot carry a catalog's or config's text
 * as markup.
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!
  values.forEach((v, i) => {
    out += piece(v) + strings[i + 1]!
  })
  return new Html(out)
}

function piece(v: unknown): string {
  if (v instanceof Html) return v.text
  if (Array.isArray(v)) return v.map(piece).join('')
  if (v === null || v === undefined || v === false) return ''
  return escapeHtml(String(v))
}
