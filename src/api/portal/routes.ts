import { Elysia } from 'elysia'
import type { BillingRecords, PortalLinks, SubscriptionBilling } from '../../domain/billing'
import { DomainError } from '../../domain/errors'
import type { PortalData, ProcessorPages } from '../../drivers/payments/types'
import type { AccountRow } from '../../store/schema'
import type { ApiPlugins } from '../plugins'
import { cookieOf, timingSafeEqualText } from '../http/forms'

const CSRF_COOKIE = 'berth_portal_csrf'
const PAGE_HEADERS = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer' }

export interface PortalDeps {
  /** The processor's pages (`processor.pages`): the portal's HTML and what a card stands for. */
  pages: ProcessorPages
  links: PortalLinks
  subscriptions: SubscriptionBilling
  billing: Pick<BillingRecords, 'paymentsOf' | 'findPayment'>
  accounts: { find(id: string): AccountRow | undefined }
}

/** The paths whose forms post url-encoded fields (the JSON body parser lets them through). */
export const isPortalForm = (path: string) => /^\/billing\/portal\/[^/]+\/(card|subscriptions\/[^/]+\/(cancel|resume))$/.test(path)

/**
 * The built-in processor's billing portal at {site_url}/billing/portal/{signed token}/ (outside
 * /api/v1, as Stripe's billing.stripe.com would be): the card on file and its replacement, the
 * subscriptions with cancel at period end (and its undo), the payments with a receipt each.
 * Opened by the signed URL that GET /account/billing-portal/ returns (valid one hour); its forms
 * post without scripts, with a double-submit CSRF token bound to the token's path.
 */
export const portalRoutes = (plugins: ApiPlugins, d: PortalDeps) => {
  /** The account a token opens, or null (forged, expired, or the account is gone). */
  const open = (token: string): { account: AccountRow; expiresAt: number } | null => {
    const v = d.links.verify(token)
    if (!v.ok) return null
    const account = d.accounts.find(v.accountId)
    return account && account.status === 'active' ? { account, expiresAt: v.expiresAt } : null
  }
  const gone = () => new Response(d.pages.portalGone(), { status: 404, headers: PAGE_HEADERS })
  const data = (token: string, account: AccountRow, expiresAt: number): PortalData => ({
    token,
    language: account.language === 'fr' ? 'fr' : 'en',
    email: account.email,
    method: account.paymentMethodLabel,
    expiresAt,
    subscriptions: d.subscriptions.list(account.id).map((s) => ({
      id: s.id, plan: s.plan.name, period: s.billing_period, status: s.status, amountCents: Math.round(s.amount * 100), periodEnd: Date.parse(s.current_period_end),
      cancelAtPeriodEnd: s.cancel_at_period_end, sites: s.sites, lastChargeError: s.last_charge_error,
    })),
    payments: d.billing.paymentsOf(account.id).map((p) => ({ id: p.id, createdAt: p.createdAt, description: p.description, amountCents: p.amountCents, status: p.status, method: p.methodLabel, kind: p.kind })),
  })
  const show = (token: string, request: Request, status: number, opts: { error?: string; notice?: string; focusCard?: boolean } = {}) => {
    const opened = open(token)
    if (!opened) return gone()
    const csrf = cookieOf(request, CSRF_COOKIE) ?? Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('hex')
    const secure = request.url.startsWith('https:') ? '; Secure' : ''
    return new Response(d.pages.portal(data(token, opened.account, opened.expiresAt), { csrf, ...opts }), {
      status,
      headers: { ...PAGE_HEADERS, 'set-cookie': `${CSRF_COOKIE}=${csrf}; Path=/billing/portal/${token}/; HttpOnly; SameSite=Strict; Max-Age=3600${secure}` },
    })
  }
  /** Checks the form's CSRF token; the answer to send when it is wrong. */
  const refused = (token: string, request: Request, form: Record<string, string>) => {
    const cookie = cookieOf(request, CSRF_COOKIE)
    if (cookie && form.csrf && timingSafeEqualText(cookie, form.csrf)) return null
    return show(token, request, 403, { error: 'This form has expired or did not come from this page; reload the page and try again. Nothing was changed.' })
  }
  const back = (token: string, notice: string) => new Response(null, { status: 303, headers: { location: `/billing/portal/${token}/?notice=${encodeURIComponent(notice)}`, 'cache-control': 'no-store' } })

  return new Elysia({ name: 'portal-routes' })
    .use(plugins)
    .get('/billing/portal/:token/', ({ params, request, query }) => {
      const notice = typeof query.notice === 'string' ? NOTICES[query.notice] : undefined
      return show(params.token, request, 200, { notice, focusCard: query.flow === 'payment_method_update' })
    }, { public: true, detail: { hide: true } })
    .post('/billing/portal/:token/card', async ({ params, body, request }) => {
      const form = (body ?? {}) as Record<string, string>
      const opened = open(params.token)
      if (!opened) return gone()
      const no = refused(params.token, request, form)
      if (no) return no
      const [month, year] = (form.exp ?? '').split('/').map((v) => Number.parseInt(v, 10))
      const card = d.pages.methodForCard({ number: form.card ?? '', expMonth: month || 0, expYear: year || 0, cvc: form.cvc ?? '' })
      if (!card.ok) return show(params.token, request, 422, { error: card.message, focusCard: true })
      const paid = await d.subscriptions.paymentMethodChanged(opened.account.id, card.methodId, card.label)
      const stillUnpaid = d.subscriptions.list(opened.account.id).some((s) => s.status === 'past_due')
      return back(params.token, paid.length > 0 ? 'card_saved_paid' : stillUnpaid ? 'card_saved_declined' : 'card_saved')
    }, { public: true, detail: { hide: true } })
    .post('/billing/portal/:token/subscriptions/:id/:action', ({ params, body, request }) => {
      const form = (body ?? {}) as Record<string, string>
      const opened = open(params.token)
      if (!opened || (params.action !== 'cancel' && params.action !== 'resume')) return gone()
      const no = refused(params.token, request, form)
      if (no) return no
      try {
        d.subscriptions.setCancelAtPeriodEnd(opened.account.id, params.id, params.action === 'cancel')
      } catch (err) {
        if (err instanceof DomainError) return show(params.token, request, err.kind === 'not_found' ? 404 : 409, { error: err.message })
        throw err
      }
      return back(params.token, params.action === 'cancel' ? 'canceled' : 'resumed')
    }, { public: true, detail: { hide: true } })
    .get('/billing/portal/:token/receipts/:id/', ({ params }) => {
      const opened = open(params.token)
      if (!opened) return gone()
      const p = d.billing.findPayment(opened.account.id, params.id)
      if (!p || (p.status !== 'succeeded' && p.status !== 'refunded')) return new Response(d.pages.portalGone(), { status: 404, headers: PAGE_HEADERS })
      return new Response(d.pages.receipt({
        language: opened.account.language === 'fr' ? 'fr' : 'en', brand: 'Berth', token: params.token, id: p.id, createdAt: p.createdAt, description: p.description,
        amountCents: p.amountCents, status: p.status, method: p.methodLabel, processorRef: p.processorRef, testMode: p.testMode, email: opened.account.email, kind: p.kind, refundedAt: p.refundedAt,
      }), { headers: PAGE_HEADERS })
    }, { public: true, detail: { hide: true } })
}

/** The outcomes a post redirects with (names only: no text from the query reaches the page). */
const NOTICES: Record<string, string> = {
  card_saved: 'Card saved. It pays the next renewals.',
  card_saved_paid: 'Card saved, and the unpaid renewal is paid: the sites are active again.',
  card_saved_declined: 'Card saved, but the unpaid renewal was declined again. Try another card.',
  canceled: 'The subscription ends at the end of its period; its sites are then scheduled for deletion.',
  resumed: 'The subscription renews again at the end of its period.',
}
