/**
 * OpenSRS's XML message format (the OPS envelope): one `dt_assoc` of items, values being text,
 * `dt_assoc` (an object) or `dt_array` (a list, items keyed 0, 1, ...). Written here rather than
 * with an XML library: the format is this small subset, and both directions stay strict.
 */

export type OpsValue = string | OpsValue[] | { [key: string]: OpsValue }
export type OpsAssoc = { [key: string]: OpsValue }

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;')
}

function unescapeXml(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (whole, entity: string) => {
    if (entity[0] === '#') return String.fromCodePoint(entity[1] === 'x' || entity[1] === 'X' ? parseInt(entity.slice(2), 16) : parseInt(entity.slice(1), 10))
    const known = ENTITIES[entity.toLowerCase()]
    if (known === undefined) throw new Error(`unknown XML entity ${whole}`)
    return known
  })
}

function encodeValue(value: OpsValue): string {
  if (Array.isArray(value)) return `<dt_array>${value.map((v, i) => `<item key="${i}">${encodeValue(v)}</item>`).join('')}</dt_array>`
  if (typeof value === 'object') return `<dt_assoc>${Object.entries(value).map(([k, v]) => `<item key="${escapeXml(k)}">${encodeValue(v)}</item>`).join('')}</dt_assoc>`
  return escapeXml(value)
}

/** The whole request document for one command. */
export function encodeEnvelope(body: OpsAssoc): string {
  return `<?xml version='1.0' encoding='UTF-8' standalone='no' ?><!DOCTYPE OPS_envelope SYSTEM 'ops.dtd'><OPS_envelope><header><version>0.9</version></header><body><data_block>${encodeValue(body)}</data_block></body></OPS_envelope>`
}

type Token = { kind: 'open' | 'close'; name: string; key: string | null } | { kind: 'text'; text: string }

function tokenize(xml: string): Token[] {
  const tokens: Token[] = []
  const tag = /<(\/?)([A-Za-z_][\w.-]*)((?:\s+[\w:-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>|<\?[\s\S]*?\?>|<!DOCTYPE[^>]*>|<!--[\s\S]*?-->/g
  let last = 0
  for (const m of xml.matchAll(tag)) {
    if (m.index! > last) tokens.push({ kind: 'text', text: xml.slice(last, m.index) })
    last = m.index! + m[0].length
    if (!m[2]) continue // a declaration, doctype or comment
    const key = /\bkey\s*=\s*(?:"([^"]*)"|'([^']*)')/.exec(m[3] ?? '')
    const keyText = key ? unescapeXml(key[1] ?? key[2] ?? '') : null
    if (m[1]) tokens.push({ kind: 'close', name: m[2], key: null })
    else {
      tokens.push({ kind: 'open', name: m[2], key: keyText })
      if (m[4]) tokens.push({ kind: 'close', name: m[2], key: null })
    }
  }
  if (last < xml.length) tokens.push({ kind: 'text', text: xml.slice(last) })
  if (tokens.some((t) => t.kind === 'text' && t.text.includes('<'))) throw new Error('malformed XML')
  return tokens
}

/** The `dt_assoc` in a response's data_block; throws on anything that is not that shape. */
export function decodeEnvelope(xml: string): OpsAssoc {
  const tokens = tokenize(xml)
  let i = tokens.findIndex((t) => t.kind === 'open' && t.name === 'data_block')
  if (i === -1) throw new Error('no data_block in the response')
  i++
  const skipSpace = () => {
    while (i < tokens.length && tokens[i]!.kind === 'text' && !(tokens[i] as { text: string }).text.trim()) i++
  }
  const expectClose = (name: string) => {
    skipSpace()
    const t = tokens[i]
    if (!t || t.kind !== 'close' || t.name !== name) throw new Error(`expected </${name}>`)
    i++
  }
  const container = (): OpsValue => {
    skipSpace()
    const open = tokens[i]
    if (!open || open.kind !== 'open' || (open.name !== 'dt_assoc' && open.name !== 'dt_array')) throw new Error('expected dt_assoc or dt_array')
    i++
    const entries: [string, OpsValue][] = []
    for (;;) {
      skipSpace()
      const t = tokens[i]
      if (!t) throw new Error(`unclosed <${open.name}>`)
      if (t.kind === 'close' && t.name === open.name) {
        i++
        break
      }
      if (t.kind !== 'open' || t.name !== 'item' || t.key === null) throw new Error('expected <item key="...">')
      i++
      entries.push([t.key, item()])
    }
    if (open.name === 'dt_array') return entries.sort(([a], [b]) => Number(a) - Number(b)).map(([, v]) => v)
    return Object.fromEntries(entries)
  }
  const item = (): OpsValue => {
    const save = i
    skipSpace()
    const t = tokens[i]
    if (t?.kind === 'open' && (t.name === 'dt_assoc' || t.name === 'dt_array')) {
      const value = container()
      expectClose('item')
      return value
    }
    i = save
    let text = ''
    while (tokens[i]?.kind === 'text') text += (tokens[i++] as { text: string }).text
    const close = tokens[i]
    if (!close || close.kind !== 'close' || close.name !== 'item') throw new Error('expected </item>')
    i++
    return unescapeXml(text)
  }
  const body = container()
  if (Array.isArray(body) || typeof body !== 'object') throw new Error('the data_block is not a dt_assoc')
  return body
}
