import Stripe from 'stripe'

/**
 * A FAKE Stripe API: Stripe cannot be reached from the machines the tests run on, so the Stripe
 * driver (src/drivers/payments/stripe.ts) is tested over real HTTP against this stand-in. It
 * implements only the endpoints the driver calls, the way Stripe documents them: form-encoded
 * request bodies with bracketed keys (`metadata[reference]=...`, `expand[0]=...`), JSON objects
 * with `id` and `object`, errors as `{ error: { type, code, decline_code, message, param } }` with
 * Stripe's status codes (400, 401, 402, 404), Bearer authentication with the secret key, and the
 * Idempotency-Key header (the same key answers the stored first answer and moves no money again;
 * the same key with other parameters is an `idempotency_error`; like Stripe, a key is forgotten
 * 24 hours after its first use, by the fake's clock).
 *
 * Stripe's test payment methods behave as at Stripe: `pm_card_visa` and `pm_card_mastercard`
 * pay; `pm_card_visa_chargeDeclined` is declined (`card_declined`, decline code
 * `generic_decline`); `pm_card_chargeDeclinedInsufficientFunds` is declined with
 * `insufficient_funds`; `pm_card_authenticationRequired` needs 3-D Secure (on-session: the
 * PaymentIntent stays `requires_action`; off-session: a card error `authentication_required`).
 * Using a token makes a new saved PaymentMethod (`pm_...`), attached to the customer when the
 * payment sets `setup_future_usage`.
 *
 * Endpoints: POST/GET customers, GET payment_methods, POST/GET payment_intents, GET
 * payment_intents/search (`metadata['key']:'value'` clauses joined by AND; as at Stripe, an
 * object shows in search a minute after it was made), POST checkout/sessions, POST/GET refunds, POST billing_portal/sessions. What a buyer or an account
 * owner does on Stripe's own pages (paying a Checkout Session, replacing the card in the billing
 * portal) is done by the helpers below, which return the webhook event Stripe would send.
 */

type Form = { [key: string]: FormValue }
type FormValue = string | FormValue[] | Form
type Obj = Record<string, unknown>

export interface FakeRequest {
  method: string
  path: string
  params: Form
  idempotencyKey: string | null
  /** True when the answer was the stored answer of an earlier request with the same key. */
  replayed: boolean
}

/** A payment that moved money at the fake (one per successful PaymentIntent). */
export interface FakeCharge {
  paymentIntent: string
  amount: number
  currency: string
  customer: string | null
  paymentMethod: string
  offSession: boolean
  reference: string | null
  via: 'api' | 'checkout'
}

export interface FakeStripe {
  /** Origin to give the driver as `apiBase`, e.g. `http://127.0.0.1:41234`. */
  url: string
  secretKey: string
  requests: FakeRequest[]
  charges: FakeCharge[]
  customers: Map<string, Obj>
  paymentMethods: Map<string, Obj>
  paymentIntents: Map<string, Obj>
  checkoutSessions: Map<string, Obj>
  refunds: Map<string, Obj>
  /** Until called again with null, every API request answers this status (a Stripe outage). */
  breakWith(status: number | null): void
  /** Forgets stored idempotent answers at once (the fake's clock forgets each after 24 hours). */
  expireIdempotencyKeys(): void
  /**
   * The buyer pays the Checkout Session on Stripe's page with a test payment method (a declining
   * one throws: the buyer stays on the page). `delayed` pays with a method that settles later
   * (payment_status `unpaid`, settled by `settleCheckout`). Returns `checkout.session.completed`.
   */
  completeCheckout(sessionId: string, opts?: { paymentMethod?: string; delayed?: boolean; email?: string }): Stripe.Event
  /** A delayed payment settles: `checkout.session.async_payment_succeeded` or `..._failed`. */
  settleCheckout(sessionId: string, succeeded: boolean): Stripe.Event
  /** The session expires unpaid: `checkout.session.expired`. */
  expireCheckout(sessionId: string): Stripe.Event
  /**
   * The account's owner adds a card in the billing portal and makes it the default: returns the
   * two events Stripe sends, `setup_intent.succeeded` and `customer.updated`.
   */
  replaceDefaultMethod(customerId: string, paymentMethod?: string): { setupIntentSucceeded: Stripe.Event; customerUpdated: Stripe.Event }
  /** Any event, shaped as Stripe's (`id`, `object: 'event'`, `data.object`, ...). */
  event(type: string, object: Obj, previousAttributes?: Obj): Stripe.Event
  stop(): Promise<void>
}

interface TestCard {
  brand: string
  last4: string
  outcome: 'succeed' | 'decline' | 'authenticate'
  declineCode?: string
  message?: string
}

/** Stripe's test payment-method tokens (docs.stripe.com/testing). */
export const TEST_PAYMENT_METHODS: Record<string, TestCard> = {
  pm_card_visa: { brand: 'visa', last4: '4242', outcome: 'succeed' },
  pm_card_mastercard: { brand: 'mastercard', last4: '4444', outcome: 'succeed' },
  pm_card_visa_chargeDeclined: { brand: 'visa', last4: '0002', outcome: 'decline', declineCode: 'generic_decline', message: 'Your card was declined.' },
  pm_card_chargeDeclinedInsufficientFunds: { brand: 'visa', last4: '9995', outcome: 'decline', declineCode: 'insufficient_funds', message: 'Your card has insufficient funds.' },
  pm_card_authenticationRequired: { brand: 'visa', last4: '3184', outcome: 'authenticate' },
}

/** A saved PaymentMethod, with the test token it was made from (not shown in answers). */
interface FakeMethod extends Obj {
  id: string
  customer: string | null
  token: string
  used: boolean
}

interface Answer {
  status: number
  body: unknown
}

/** Thrown by handlers; becomes Stripe's error envelope. */
class ApiError extends Error {
  constructor(readonly status: number, readonly error: Obj) {
    super(String(error.message))
  }
}

const invalid = (param: string | null, message: string, code?: string) =>
  new ApiError(400, { type: 'invalid_request_error', message, ...(param ? { param } : {}), ...(code ? { code } : {}) })
const missing = (param: string, message: string) => invalid(param, message, 'resource_missing')

const randomId = (prefix: string) => `${prefix}_${Buffer.from(crypto.getRandomValues(new Uint8Array(12))).toString('hex')}`
const nowSeconds = () => Math.floor(Date.now() / 1000)

/**
 * Reads Stripe's form encoding: `a[b][0][c]=v` becomes `{ a: { b: [{ c: 'v' }] } }`; both
 * `x[0]` and `x[]` make arrays.
 */
export function parseForm(text: string): Form {
  const root: Form = {}
  for (const [key, value] of new URLSearchParams(text)) {
    const path = [key.split('[')[0]!, ...[...key.matchAll(/\[([^\]]*)\]/g)].map((m) => m[1]!)]
    let node: Form = root
    path.forEach((part, i) => {
      const name = part === '' ? String(Object.keys(node).length) : part
      if (i === path.length - 1) node[name] = value
      else node = (node[name] ??= {}) as Form
    })
  }
  return arrays(root) as Form
}

function arrays(value: FormValue): FormValue {
  if (typeof value === 'string' || Array.isArray(value)) return value
  const keys = Object.keys(value)
  const converted = Object.fromEntries(keys.map((k) => [k, arrays(value[k]!)]))
  const numeric = keys.length > 0 && keys.every((k, i) => k === String(i))
  return numeric ? keys.map((k) => converted[k]!) : converted
}

const str = (v: FormValue | undefined): string | null => (typeof v === 'string' && v !== '' ? v : null)
const form = (v: FormValue | undefined): Form => (v && typeof v === 'object' && !Array.isArray(v) ? v : {})
const list = (v: FormValue | undefined): FormValue[] => (Array.isArray(v) ? v : [])

/**
 * Signs a webhook payload as Stripe does (the `Stripe-Signature` header), with stripe-node's own
 * test helper. `timestamp` is in seconds (default now); an old one makes a stale signature.
 */
export async function signEvent(payload: string | object, secret: string, timestamp = nowSeconds()): Promise<string> {
  const text = typeof payload === 'string' ? payload : JSON.stringify(payload)
  // The async variant: the sync one needs Node's crypto, which Bun's build of stripe-node lacks.
  return Stripe.webhooks.generateTestHeaderStringAsync({ payload: text, secret, timestamp, cryptoProvider: Stripe.createSubtleCryptoProvider() })
}

export interface DeliveryOptions {
  secret: string
  /** Seconds since the epoch written into the signature (default now). */
  timestamp?: number
  /** The exact Stripe-Signature header to send instead of a computed one; '' sends none. */
  signature?: string
}

/** The body and headers of a webhook delivery, as Stripe sends them. */
export async function webhookDelivery(event: object, opts: DeliveryOptions): Promise<{ body: string; headers: Headers }> {
  const body = JSON.stringify(event, null, 2)
  const headers = new Headers({ 'content-type': 'application/json; charset=utf-8', 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' })
  const signature = opts.signature ?? (await signEvent(body, opts.secret, opts.timestamp))
  if (signature !== '') headers.set('stripe-signature', signature)
  return { body, headers }
}

/** POSTs a signed event to a webhook endpoint, as Stripe does. */
export async function deliver(url: string, event: object, opts: DeliveryOptions): Promise<Response> {
  const { body, headers } = await webhookDelivery(event, opts)
  return fetch(url, { method: 'POST', headers, body })
}

/** Stripe may forget an idempotency key once it is 24 hours old. */
const IDEMPOTENCY_KEY_TTL_MS = 24 * 3_600_000
/** Stripe's search lags: "under normal operating conditions, data is searchable in less than a minute". */
const SEARCH_LAG_SECONDS = 60

/** `clock` is the fake's time (default the system's): objects' `created`, idempotency keys' age, search's lag. */
export async function startFakeStripe(opts: { secretKey?: string; clock?: { now(): number } } = {}): Promise<FakeStripe> {
  const secretKey = opts.secretKey ?? 'sk_test_fake_berth'
  const now = () => opts.clock?.now() ?? Date.now()
  const nowSeconds = () => Math.floor(now() / 1000)
  const requests: FakeRequest[] = []
  const charges: FakeCharge[] = []
  const customers = new Map<string, Obj>()
  const paymentMethods = new Map<string, FakeMethod>()
  const paymentIntents = new Map<string, Obj>()
  const checkoutSessions = new Map<string, Obj>()
  const refunds = new Map<string, Obj>()
  const portalSessions = new Map<string, Obj>()
  const stored = new Map<string, { fingerprint: string; answer: Answer; at: number }>()
  let outage: number | null = null
  let origin = ''

  const cardOf = (pm: { token: string }) => TEST_PAYMENT_METHODS[pm.token]!

  /** A PaymentMethod made from a test token, unattached. */
  function methodFromToken(token: string): FakeMethod {
    const card = TEST_PAYMENT_METHODS[token]!
    const pm: FakeMethod = {
      id: randomId('pm'), object: 'payment_method', type: 'card', created: nowSeconds(), livemode: false, customer: null, metadata: {},
      card: { brand: card.brand, display_brand: card.brand, last4: card.last4, exp_month: 12, exp_year: new Date().getUTCFullYear() + 3, funding: 'credit', country: 'US' },
      billing_details: { email: null, name: null }, token, used: false,
    }
    paymentMethods.set(pm.id, pm)
    return pm
  }

  const publicMethod = (pm: Obj) => {
    const { token: _t, used: _u, ...rest } = pm
    return rest
  }

  function resolveMethod(ref: string | null, customer: string | null): FakeMethod {
    if (!ref) throw invalid('payment_method', 'You must provide a payment_method to confirm this PaymentIntent.', 'parameter_missing')
    if (TEST_PAYMENT_METHODS[ref]) return methodFromToken(ref)
    const pm = paymentMethods.get(ref)
    if (!pm) throw missing('payment_method', `No such PaymentMethod: '${ref}'`)
    if (pm.customer && pm.customer !== customer) {
      throw invalid('payment_method', customer ? `The provided PaymentMethod belongs to another Customer (${pm.customer}).` : 'The provided PaymentMethod is attached to a Customer: pass that customer with it.')
    }
    if (!pm.customer && pm.used) throw invalid('payment_method', 'This PaymentMethod was previously used without being attached to a Customer or was detached from a Customer, and may not be used again.')
    return pm
  }

  function expandIntent(pi: Obj, expand: FormValue[]) {
    if (!expand.includes('payment_method') || typeof pi.payment_method !== 'string') return pi
    const pm = paymentMethods.get(pi.payment_method)
    return { ...pi, payment_method: pm ? publicMethod(pm) : pi.payment_method }
  }

  function createCustomer(p: Form) {
    const customer = {
      id: randomId('cus'), object: 'customer', created: nowSeconds(), livemode: false, email: str(p.email), name: str(p.name), description: str(p.description),
      metadata: form(p.metadata), invoice_settings: { default_payment_method: null as string | null, custom_fields: null, footer: null, rendering_options: null },
    }
    customers.set(customer.id, customer)
    return customer
  }

  function createPaymentIntent(p: Form): Answer {
    const amount = Number(str(p.amount))
    if (!Number.isInteger(amount) || amount < 50) throw invalid('amount', 'Amount must be at least $0.50 cad', 'amount_too_small')
    const currency = str(p.currency)
    if (!currency) throw invalid('currency', 'Missing required param: currency.', 'parameter_missing')
    const customer = str(p.customer)
    if (customer && !customers.has(customer)) throw missing('customer', `No such customer: '${customer}'`)
    const confirm = str(p.confirm) === 'true'
    const offSession = str(p.off_session) === 'true'
    if (offSession && !confirm) throw invalid('off_session', 'off_session can only be used with confirm=true.')
    if (offSession && str(p.setup_future_usage)) throw invalid('setup_future_usage', 'setup_future_usage cannot be used with off_session=true.')
    // Since API version 2023-08-16 PaymentIntents use the Dashboard's payment methods, some of
    // which redirect: confirming without a return_url then fails unless redirects are ruled out.
    const redirectsRuledOut = list(p.allowed_payment_method_types).length > 0 || str(form(p.automatic_payment_methods).allow_redirects) === 'never'
    if (confirm && !redirectsRuledOut && !str(p.return_url)) {
      throw invalid(null, 'This PaymentIntent is configured to accept payment methods enabled in your Dashboard. Because some of these payment methods might redirect your customer off of your page, you must provide a `return_url`.')
    }
    const pm = resolveMethod(str(p.payment_method), customer)
    const pi: Obj = {
      id: randomId('pi'), object: 'payment_intent', created: nowSeconds(), livemode: false, amount, amount_received: 0, currency, customer,
      description: str(p.description), metadata: form(p.metadata), payment_method: pm.id, payment_method_types: ['card'],
      setup_future_usage: str(p.setup_future_usage), status: 'requires_confirmation', latest_charge: null, last_payment_error: null, next_action: null,
    }
    paymentIntents.set(pi.id as string, pi)
    if (!confirm) return { status: 200, body: expandIntent(pi, list(p.expand)) }
    pm.used = true
    const card = cardOf(pm)
    if (card.outcome === 'succeed') {
      Object.assign(pi, { status: 'succeeded', amount_received: amount, latest_charge: randomId('ch') })
      if (customer && pi.setup_future_usage) pm.customer = customer
      charges.push({ paymentIntent: pi.id as string, amount, currency, customer, paymentMethod: pm.id, offSession, reference: str(form(p.metadata).reference), via: 'api' })
      return { status: 200, body: expandIntent(pi, list(p.expand)) }
    }
    if (card.outcome === 'authenticate' && !offSession) {
      Object.assign(pi, { status: 'requires_action', next_action: { type: 'use_stripe_sdk', use_stripe_sdk: {} } })
      return { status: 200, body: expandIntent(pi, list(p.expand)) }
    }
    const error = card.outcome === 'authenticate'
      ? { type: 'card_error', code: 'authentication_required', decline_code: 'authentication_required', message: 'Your card was declined. This transaction requires authentication.' }
      : { type: 'card_error', code: 'card_declined', decline_code: card.declineCode, message: card.message }
    const charge = randomId('ch')
    Object.assign(pi, { status: 'requires_payment_method', latest_charge: charge, last_payment_error: { ...error, payment_method: publicMethod(pm) } })
    throw new ApiError(402, { ...error, charge, payment_intent: pi, payment_method: publicMethod(pm), doc_url: `https://stripe.com/docs/error-codes/${error.code}` })
  }

  /** Stripe's search query language, the part the driver uses: `metadata['k']:'v'` clauses joined by AND. */
  function searchPaymentIntents(q: Form): Answer {
    const query = str(q.query) ?? ''
    const clause = /^metadata\['((?:[^'\\]|\\.)+)'\]:'((?:[^'\\]|\\.)*)'$/
    const unescape = (text: string) => text.replace(/\\(.)/g, '$1')
    const wanted = query.split(' AND ').map((part) => {
      const m = clause.exec(part.trim())
      if (!m) throw invalid('query', `The fake Stripe searches metadata['key']:'value' clauses only (got ${JSON.stringify(part)}).`)
      return [unescape(m[1]!), unescape(m[2]!)] as const
    })
    const searchable = nowSeconds() - SEARCH_LAG_SECONDS
    const data = [...paymentIntents.values()]
      .filter((pi) => (pi.created as number) <= searchable && wanted.every(([k, v]) => (pi.metadata as Obj)[k] === v))
      .reverse().slice(0, Number(str(q.limit) ?? '10'))
      .map((pi) => list(q.expand).includes('data.payment_method') ? expandIntent(pi, ['payment_method']) : pi)
    return { status: 200, body: { object: 'search_result', url: '/v1/payment_intents/search', has_more: false, next_page: null, data } }
  }

  function createCheckoutSession(p: Form): Answer {
    if (str(p.mode) !== 'payment') throw invalid('mode', 'The fake supports mode=payment only.')
    const items = list(p.line_items).map(form)
    if (items.length === 0) throw invalid('line_items', 'line_items is required in payment mode.', 'parameter_missing')
    let total = 0
    let currency: string | null = null
    for (const [i, item] of items.entries()) {
      const price = form(item.price_data)
      const unit = Number(str(price.unit_amount))
      if (!str(price.currency) || !Number.isInteger(unit) || !str(form(price.product_data).name)) throw invalid(`line_items[${i}][price_data]`, 'price_data needs currency, unit_amount and product_data[name].')
      currency = str(price.currency)
      total += unit * Number(str(item.quantity) ?? '1')
    }
    if (!str(p.success_url)) throw invalid('success_url', 'Missing required param: success_url.', 'parameter_missing')
    const id = `cs_test_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('hex')}`
    const session = {
      id, object: 'checkout.session', created: nowSeconds(), expires_at: nowSeconds() + 86_400, livemode: false, mode: 'payment', status: 'open', payment_status: 'unpaid',
      amount_total: total, amount_subtotal: total, currency, client_reference_id: str(p.client_reference_id), customer: null as string | null,
      customer_email: str(p.customer_email), customer_creation: str(p.customer_creation), customer_details: null as Obj | null, metadata: form(p.metadata),
      payment_intent: null as string | null, success_url: str(p.success_url), cancel_url: str(p.cancel_url), url: `${origin}/c/pay/${id}`,
      // Kept for completion; not part of Stripe's answer.
      payment_intent_data: form(p.payment_intent_data),
    }
    checkoutSessions.set(id, session)
    return { status: 200, body: publicSession(session) }
  }

  const publicSession = (s: Obj) => {
    const { payment_intent_data: _p, ...rest } = s
    return { ...rest, url: rest.status === 'open' ? rest.url : null }
  }

  function createRefund(p: Form): Answer {
    const ref = str(p.payment_intent)
    if (!ref) throw invalid('payment_intent', 'Missing required param: payment_intent or charge.', 'parameter_missing')
    const pi = paymentIntents.get(ref)
    if (!pi) throw missing('payment_intent', `No such payment_intent: '${ref}'`)
    if (pi.status !== 'succeeded') throw invalid('payment_intent', `This PaymentIntent (${ref}) does not have a successful charge to refund.`)
    const already = [...refunds.values()].filter((r) => r.payment_intent === ref).reduce((sum, r) => sum + (r.amount as number), 0)
    const remaining = (pi.amount_received as number) - already
    if (remaining <= 0) throw invalid(null, `Charge ${pi.latest_charge} has already been refunded.`, 'charge_already_refunded')
    const amount = str(p.amount) ? Number(str(p.amount)) : remaining
    if (!Number.isInteger(amount) || amount <= 0 || amount > remaining) throw invalid('amount', `Refund amount (${amount}) is greater than unrefunded amount on charge (${remaining})`, 'amount_too_large')
    const refund = {
      id: randomId('re'), object: 'refund', created: nowSeconds(), amount, currency: pi.currency, payment_intent: ref, charge: pi.latest_charge,
      reason: str(p.reason), metadata: form(p.metadata), status: 'succeeded',
    }
    refunds.set(refund.id, refund)
    return { status: 200, body: refund }
  }

  function listRefunds(q: Form): Answer {
    const ref = str(q.payment_intent)
    const data = [...refunds.values()].filter((r) => !ref || r.payment_intent === ref).reverse()
    const limit = Number(str(q.limit) ?? '10')
    return { status: 200, body: { object: 'list', url: '/v1/refunds', has_more: data.length > limit, data: data.slice(0, limit) } }
  }

  function createPortalSession(p: Form): Answer {
    const customer = str(p.customer)
    if (!customer) throw invalid('customer', 'Missing required param: customer.', 'parameter_missing')
    if (!customers.has(customer)) throw missing('customer', `No such customer: '${customer}'`)
    const flowType = str(form(p.flow_data).type)
    if (flowType && flowType !== 'payment_method_update') throw invalid('flow_data[type]', 'The fake supports the payment_method_update flow only.')
    const id = randomId('bps')
    const session = {
      id, object: 'billing_portal.session', created: nowSeconds(), livemode: false, customer, return_url: str(p.return_url), locale: null, configuration: 'bpc_fake_default',
      flow: flowType ? { type: flowType, after_completion: { type: 'portal_homepage', redirect: null, hosted_confirmation: null } } : null, url: `${origin}/p/session/${id}`,
    }
    portalSessions.set(id, session)
    return { status: 200, body: session }
  }

  function route(method: string, path: string, params: Form): Answer {
    let m: RegExpExecArray | null
    if (method === 'POST' && path === '/v1/customers') return { status: 200, body: createCustomer(params) }
    if (method === 'GET' && (m = /^\/v1\/customers\/([^/]+)$/.exec(path))) {
      const customer = customers.get(m[1]!)
      if (!customer) throw missing('id', `No such customer: '${m[1]}'`)
      return { status: 200, body: customer }
    }
    if (method === 'GET' && (m = /^\/v1\/payment_methods\/([^/]+)$/.exec(path))) {
      const pm = paymentMethods.get(m[1]!)
      if (!pm) throw missing('payment_method', `No such PaymentMethod: '${m[1]}'`)
      return { status: 200, body: publicMethod(pm) }
    }
    if (method === 'POST' && path === '/v1/payment_intents') return createPaymentIntent(params)
    if (method === 'GET' && path === '/v1/payment_intents/search') return searchPaymentIntents(params)
    if (method === 'GET' && (m = /^\/v1\/payment_intents\/([^/]+)$/.exec(path))) {
      const pi = paymentIntents.get(m[1]!)
      if (!pi) throw missing('intent', `No such payment_intent: '${m[1]}'`)
      return { status: 200, body: expandIntent(pi, list(params.expand)) }
    }
    if (method === 'POST' && path === '/v1/checkout/sessions') return createCheckoutSession(params)
    if (method === 'POST' && path === '/v1/refunds') return createRefund(params)
    if (method === 'GET' && path === '/v1/refunds') return listRefunds(params)
    if (method === 'POST' && path === '/v1/billing_portal/sessions') return createPortalSession(params)
    throw new ApiError(404, { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path}). The fake Stripe implements only what Berth's driver calls.` })
  }

  async function handle(req: Request): Promise<Response> {
    const url = new URL(req.url)
    if (req.method === 'GET' && /^\/(c\/pay|p\/session)\//.test(url.pathname)) {
      return new Response(`<!doctype html><title>Fake Stripe page</title><p>The fake Stripe's page for ${url.pathname.split('/').pop()}: tests act on it through the fake's helpers.</p>`, { headers: { 'content-type': 'text/html; charset=utf-8' } })
    }
    const text = req.method === 'GET' ? url.search.slice(1) : await req.text()
    const params = parseForm(text)
    const idempotencyKey = req.method === 'POST' ? req.headers.get('idempotency-key') : null
    const record: FakeRequest = { method: req.method, path: url.pathname, params, idempotencyKey, replayed: false }
    requests.push(record)
    const headers = { 'content-type': 'application/json', 'request-id': randomId('req') }
    const json = (answer: Answer, extra: Record<string, string> = {}) => new Response(JSON.stringify(answer.body), { status: answer.status, headers: { ...headers, ...extra } })
    if (outage !== null) return json({ status: outage, body: { error: { type: 'api_error', message: 'The fake Stripe is having an outage.' } } })
    const auth = req.headers.get('authorization') ?? ''
    if (auth !== `Bearer ${secretKey}`) {
      const given = auth.replace(/^Bearer /, '')
      const message = given ? `Invalid API Key provided: ${given.slice(0, 8)}${'*'.repeat(Math.max(0, given.length - 12))}${given.slice(-4)}` : 'You did not provide an API key.'
      return json({ status: 401, body: { error: { type: 'invalid_request_error', message } } })
    }
    const fingerprint = `${req.method} ${url.pathname} ${[...new URLSearchParams(text)].map(([k, v]) => `${k}=${v}`).sort().join('&')}`
    if (idempotencyKey && now() - (stored.get(idempotencyKey)?.at ?? Infinity) >= IDEMPOTENCY_KEY_TTL_MS) stored.delete(idempotencyKey)
    if (idempotencyKey) {
      const earlier = stored.get(idempotencyKey)
      if (earlier && earlier.fingerprint !== fingerprint) {
        return json({ status: 400, body: { error: { type: 'idempotency_error', message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey}' if you meant to execute a different request.` } } })
      }
      if (earlier) {
        record.replayed = true
        return json(earlier.answer, { 'idempotent-replayed': 'true', 'original-request': 'req_fake_original' })
      }
    }
    let answer: Answer
    try {
      answer = route(req.method, url.pathname, params)
    } catch (err) {
      if (!(err instanceof ApiError)) throw err
      answer = { status: err.status, body: { error: err.error } }
    }
    // Stripe keeps the answer of a request that ran (success or a card error), not of one that
    // failed validation.
    if (idempotencyKey && (answer.status === 200 || answer.status === 402)) stored.set(idempotencyKey, { fingerprint, answer, at: now() })
    return json(answer)
  }

  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: handle })
  origin = `http://127.0.0.1:${server.port}`

  const event = (type: string, object: Obj, previousAttributes?: Obj): Stripe.Event => ({
    id: randomId('evt'), object: 'event', api_version: Stripe.API_VERSION, created: nowSeconds(), livemode: false, pending_webhooks: 1,
    request: { id: null, idempotency_key: null }, type,
    data: { object: structuredClone(object), ...(previousAttributes ? { previous_attributes: previousAttributes } : {}) },
  }) as unknown as Stripe.Event

  const openSession = (id: string) => {
    const session = checkoutSessions.get(id)
    if (!session) throw new Error(`fake Stripe: no Checkout Session ${id}`)
    return session
  }

  return {
    url: origin,
    secretKey,
    requests,
    charges,
    customers,
    paymentMethods,
    paymentIntents,
    checkoutSessions,
    refunds,
    breakWith: (status) => {
      outage = status
    },
    expireIdempotencyKeys: () => stored.clear(),
    completeCheckout(sessionId, o = {}) {
      const session = openSession(sessionId)
      if (session.status !== 'open') throw new Error(`fake Stripe: session ${sessionId} is ${session.status}, not open`)
      const token = o.paymentMethod ?? 'pm_card_visa'
      const card = TEST_PAYMENT_METHODS[token]
      if (!card) throw new Error(`fake Stripe: unknown test payment method ${token}`)
      if (card.outcome !== 'succeed') throw new Error(`fake Stripe: ${token} does not pay; on Stripe's page the buyer would see the decline and try another card`)
      const email = o.email ?? (session.customer_email as string | null) ?? 'buyer@example.com'
      const customer = createCustomer({ email })
      const pm = methodFromToken(token)
      pm.used = true
      const intentData = session.payment_intent_data as Form
      if (str(intentData.setup_future_usage)) pm.customer = customer.id
      const amount = session.amount_total as number
      const pi: Obj = {
        id: randomId('pi'), object: 'payment_intent', created: nowSeconds(), livemode: false, amount, amount_received: o.delayed ? 0 : amount, currency: session.currency, customer: customer.id,
        description: null, metadata: form(intentData.metadata), payment_method: pm.id, payment_method_types: ['card'], setup_future_usage: str(intentData.setup_future_usage),
        status: o.delayed ? 'processing' : 'succeeded', latest_charge: randomId('ch'), last_payment_error: null, next_action: null,
      }
      paymentIntents.set(pi.id as string, pi)
      if (!o.delayed) charges.push({ paymentIntent: pi.id as string, amount, currency: session.currency as string, customer: customer.id, paymentMethod: pm.id, offSession: false, reference: session.client_reference_id as string | null, via: 'checkout' })
      Object.assign(session, { status: 'complete', payment_status: o.delayed ? 'unpaid' : 'paid', payment_intent: pi.id, customer: customer.id, customer_details: { email, name: null } })
      return event('checkout.session.completed', publicSession(session))
    },
    settleCheckout(sessionId, succeeded) {
      const session = openSession(sessionId)
      const pi = paymentIntents.get(session.payment_intent as string)
      if (session.status !== 'complete' || session.payment_status !== 'unpaid' || !pi) throw new Error(`fake Stripe: session ${sessionId} has no payment waiting to settle`)
      if (succeeded) {
        Object.assign(pi, { status: 'succeeded', amount_received: pi.amount })
        charges.push({ paymentIntent: pi.id as string, amount: pi.amount as number, currency: pi.currency as string, customer: pi.customer as string, paymentMethod: pi.payment_method as string, offSession: false, reference: session.client_reference_id as string | null, via: 'checkout' })
        session.payment_status = 'paid'
      } else {
        pi.status = 'requires_payment_method'
      }
      return event(succeeded ? 'checkout.session.async_payment_succeeded' : 'checkout.session.async_payment_failed', publicSession(session))
    },
    expireCheckout(sessionId) {
      const session = openSession(sessionId)
      if (session.status !== 'open') throw new Error(`fake Stripe: session ${sessionId} is ${session.status}, not open`)
      session.status = 'expired'
      return event('checkout.session.expired', publicSession(session))
    },
    replaceDefaultMethod(customerId, token = 'pm_card_mastercard') {
      const customer = customers.get(customerId) as (Obj & { invoice_settings: { default_payment_method: string | null } }) | undefined
      if (!customer) throw new Error(`fake Stripe: no customer ${customerId}`)
      if (!TEST_PAYMENT_METHODS[token]) throw new Error(`fake Stripe: unknown test payment method ${token}`)
      const pm = methodFromToken(token)
      pm.customer = customerId
      const setupIntent = {
        id: randomId('seti'), object: 'setup_intent', created: nowSeconds(), livemode: false, customer: customerId, payment_method: pm.id,
        status: 'succeeded', usage: 'off_session', payment_method_types: ['card'], metadata: {},
      }
      const previous = customer.invoice_settings.default_payment_method
      customer.invoice_settings.default_payment_method = pm.id
      return {
        setupIntentSucceeded: event('setup_intent.succeeded', setupIntent),
        customerUpdated: event('customer.updated', customer, { invoice_settings: { default_payment_method: previous } }),
      }
    },
    event,
    stop: () => server.stop(true),
  }
}
