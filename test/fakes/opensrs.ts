import { createHash } from 'node:crypto'

/**
 * A FAKE OpenSRS: OpenSRS cannot run on this machine, so the OpenSRS driver is tested against this
 * stand-in, which follows OpenSRS's documented XML protocol (OPS envelope over POST, X-Username
 * and X-Signature = md5(md5(body + key) + key), XCP replies with is_success, response_code,
 * response_text and attributes, the documented return codes). It keeps its domains in memory.
 *
 * Its XML reader is its own (an element tree), not the driver's, so a bug cannot hide in both.
 * Special names, as the sandbox registrar has: `taken*` is taken; `funds-*` fails registration
 * with the quota code (440); `badphone-*` fails with 465 about the phone number.
 */

interface Element {
  name: string
  key: string | null
  children: Element[]
  text: string
}

type Value = string | Value[] | { [k: string]: Value }

export interface FakeRequest {
  action: string
  object: string
  domain: string | null
  attributes: { [k: string]: Value }
}

export interface FakeOpenSrs {
  url: string
  requests: FakeRequest[]
  /** Domain → expiry (epoch ms), nameservers, lock, privacy, auto-renew. */
  domains: Map<string, { expiresAt: number; nameservers: string[]; locked: boolean; privacy: boolean; autoRenew: boolean; authCode: string }>
  /** The next command answers this code and text instead of its usual reply. */
  failNext(code: number, text: string): void
  stop(): Promise<void>
}

/** Reads XML into elements: tags, `key` attributes and text; entities decoded. */
function readXml(xml: string): Element {
  const root: Element = { name: '#root', key: null, children: [], text: '' }
  const stack = [root]
  let pos = 0
  while (pos < xml.length) {
    const lt = xml.indexOf('<', pos)
    if (lt === -1) break
    if (lt > pos) stack[stack.length - 1]!.text += decode(xml.slice(pos, lt))
    const gt = xml.indexOf('>', lt)
    if (gt === -1) throw new Error('unterminated tag')
    const inner = xml.slice(lt + 1, gt)
    pos = gt + 1
    if (inner.startsWith('?') || inner.startsWith('!')) continue
    if (inner.startsWith('/')) {
      const closing = stack.pop()
      if (!closing || closing.name !== inner.slice(1).trim()) throw new Error(`mismatched </${inner.slice(1)}>`)
      continue
    }
    const selfClosing = inner.endsWith('/')
    const name = inner.split(/[\s/]/)[0]!
    const keyMatch = /key="([^"]*)"/.exec(inner)
    const element: Element = { name, key: keyMatch ? decode(keyMatch[1]!) : null, children: [], text: '' }
    stack[stack.length - 1]!.children.push(element)
    if (!selfClosing) stack.push(element)
  }
  if (stack.length !== 1) throw new Error('unclosed elements')
  return root
}

function decode(s: string): string {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&')
}

function valueOf(item: Element): Value {
  const inner = item.children[0]
  if (!inner) return item.text
  if (inner.name === 'dt_array') return inner.children.map(valueOf)
  return Object.fromEntries(inner.children.map((c) => [c.key ?? '', valueOf(c)]))
}

function find(e: Element, name: string): Element | null {
  if (e.name === name) return e
  for (const c of e.children) {
    const f = find(c, name)
    if (f) return f
  }
  return null
}

function write(v: Value): string {
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
  if (Array.isArray(v)) return `<dt_array>${v.map((x, i) => `<item key="${i}">${write(x)}</item>`).join('')}</dt_array>`
  if (typeof v === 'object') return `<dt_assoc>${Object.entries(v).map(([k, x]) => `\n  <item key="${esc(k)}">${write(x)}</item>`).join('')}\n</dt_assoc>`
  return esc(v)
}

function reply(isSuccess: boolean, code: number, text: string, attributes: { [k: string]: Value } = {}): string {
  const body = { protocol: 'XCP', action: 'REPLY', object: 'DOMAIN', is_success: isSuccess ? '1' : '0', response_code: String(code), response_text: text, attributes }
  return `<?xml version='1.0' encoding="UTF-8" standalone="no" ?>\n<!DOCTYPE OPS_envelope SYSTEM "ops.dtd">\n<OPS_envelope>\n <header>\n  <version>0.9</version>\n </header>\n <body>\n  <data_block>\n${write(body)}\n  </data_block>\n </body>\n</OPS_envelope>\n`
}

const PRICES: Record<string, number> = { com: 15.99, ca: 17.5, net: 18.25 }
const md5 = (s: string) => createHash('md5').update(s).digest('hex')

export async function startFakeOpenSrs(opts: { user: string; key: string }): Promise<FakeOpenSrs> {
  const requests: FakeRequest[] = []
  const domains: FakeOpenSrs['domains'] = new Map()
  let forced: { code: number; text: string } | null = null

  const handle = (xml: string): string => {
    const root = readXml(xml)
    const block = find(root, 'data_block')
    if (!block) return reply(false, 430, 'Invalid command: no data_block')
    const request = valueOf({ ...block, children: block.children }) as { [k: string]: Value }
    const str = (v: Value | undefined) => (typeof v === 'string' ? v : '')
    const attributes = (typeof request.attributes === 'object' && !Array.isArray(request.attributes) ? request.attributes : {}) as { [k: string]: Value }
    const action = str(request.action)
    const domain = str(attributes.domain) || str(request.domain) || null
    requests.push({ action, object: str(request.object), domain, attributes })
    if (forced) {
      const f = forced
      forced = null
      return reply(false, f.code, f.text)
    }
    const tld = (domain ?? '').split('.').pop() ?? ''
    const label = (domain ?? '').split('.')[0] ?? ''
    const taken = label.startsWith('taken') || (domain !== null && domains.has(domain))
    const known = domain !== null ? domains.get(domain) : undefined
    switch (action) {
      case 'LOOKUP':
        return taken ? reply(true, 211, 'Domain taken', { status: 'taken' }) : reply(true, 210, 'Domain available', { status: 'available' })
      case 'GET_PRICE': {
        const base = PRICES[tld] ?? 25
        const premium = label.startsWith('premium-')
        const price = (premium ? base * 10 : base) * (str(attributes.reg_type) === 'renewal' ? 1.1 : 1)
        return reply(true, 200, 'Command completed successfully', { price: price.toFixed(2), is_registry_premium: premium ? '1' : '0' })
      }
      case 'SW_REGISTER': {
        if (taken) return reply(false, 485, 'Domain taken')
        if (label.startsWith('funds-')) return reply(false, 440, 'Insufficient funds to complete this order')
        if (label.startsWith('badphone-')) return reply(false, 465, 'Invalid phone number format in owner contact')
        const period = Number(str(attributes.period))
        const expires = new Date()
        expires.setUTCFullYear(expires.getUTCFullYear() + period)
        const ns = Array.isArray(attributes.nameserver_list) ? attributes.nameserver_list.map((n) => str((n as { name: Value }).name)) : []
        domains.set(domain!, { expiresAt: expires.getTime(), nameservers: ns, locked: str(attributes.f_lock_domain) === '1', privacy: str(attributes.f_whois_privacy) === '1', autoRenew: str(attributes.auto_renew) === '1', authCode: `auth-${label}` })
        return reply(true, 200, 'Domain registration successfully completed', { id: String(3_000_000 + domains.size), registration_text: 'Domain registration successfully completed' })
      }
      case 'RENEW': {
        if (!known) return reply(false, 480, 'Domain not found')
        if (Number(str(attributes.currentexpirationyear)) !== new Date(known.expiresAt).getUTCFullYear()) return reply(false, 465, 'Invalid current expiration year')
        const next = new Date(known.expiresAt)
        next.setUTCFullYear(next.getUTCFullYear() + Number(str(attributes.period)))
        known.expiresAt = next.getTime()
        const stamp = next.toISOString().slice(0, 19).replace('T', ' ')
        return reply(true, 200, 'Command completed successfully', { 'registration expiration date': stamp, order_id: '42' })
      }
      case 'ADVANCED_UPDATE_NAMESERVERS':
        if (!known) return reply(false, 480, 'Domain not found')
        known.nameservers = Array.isArray(attributes.assign_ns) ? attributes.assign_ns.map(str) : []
        return reply(true, 200, 'Command completed successfully')
      case 'MODIFY': {
        if (!known) return reply(false, 480, 'Domain not found')
        const data = str(attributes.data)
        if (data === 'status') known.locked = str(attributes.lock_state) === '1'
        else if (data === 'whois_privacy_state') known.privacy = str(attributes.state) === 'enable'
        else if (data === 'expire_action') known.autoRenew = str(attributes.auto_renew) === '1'
        else return reply(false, 460, `Unknown data ${data}`)
        return reply(true, 200, 'Command completed successfully')
      }
      case 'GET':
        if (!known) return reply(false, 480, 'Domain not found')
        if (str(attributes.type) === 'all_info') {
          return reply(true, 200, 'Query Successful', { expiredate: new Date(known.expiresAt).toISOString().slice(0, 19).replace('T', ' '), auto_renew: known.autoRenew ? '1' : '0' })
        }
        if (str(attributes.type) !== 'domain_auth_info') return reply(false, 460, 'Unsupported type')
        return reply(true, 200, 'Query successful', { domain_auth_info: known.authCode })
      default:
        return reply(false, 430, `Invalid command: ${action}`)
    }
  }

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const body = await req.text()
      if (req.method !== 'POST') return new Response('POST only', { status: 405 })
      if (req.headers.get('x-username') !== opts.user || req.headers.get('x-signature') !== md5(md5(body + opts.key) + opts.key)) {
        return new Response(reply(false, 400, 'Authentication Failed'), { headers: { 'content-type': 'text/xml' } })
      }
      try {
        return new Response(handle(body), { headers: { 'content-type': 'text/xml' } })
      } catch (err) {
        return new Response(reply(false, 430, `Malformed request: ${(err as Error).message}`), { headers: { 'content-type': 'text/xml' } })
      }
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}/`,
    requests,
    domains,
    failNext(code, text) {
      forced = { code, text }
    },
    async stop() {
      await server.stop(true)
    },
  }
}
