import { Elysia, t } from 'elysia'
import type { ProcessorPages } from '../../drivers/payments/types'
import { PaymentDeclinedError, ValidationError } from '../http/errors'
import { Body } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { cookieOf, timingSafeEqualText } from '../http/forms'

const CardBody = Body({
  card_number: t.String({ maxLength: 30 }),
  exp_month: t.Integer(),
  exp_year: t.Integer(),
  cvc: t.String({ maxLength: 8 }),
})

/**
 * The built-in processor's hosted page at {site_url}/pay/{ref}/ (outside /api/v1: it belongs to
 * the processor, as Stripe's checkout.stripe.com would). Mounted only for a processor that has
 * pages (`processor.pages`: the built-in one).
 */
/** The double-submit cookie of the form: set with the page, sent back with the post (SameSite=Strict). */
const CSRF_COOKIE = 'berth_pay_csrf'
const PAGE_HEADERS = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer' }

export const payRoutes = (plugins: ApiPlugins, pages: ProcessorPages) =>
  new Elysia({ name: 'pay-routes' })
    .use(plugins)
    .get('/pay/:ref/', ({ params, request }) => {
      const session = pages.session(params.ref)
      // One token per page view, bound to this payment page's path by the cookie's Path.
      const csrf = Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('hex')
      const secure = request.url.startsWith('https:') ? '; Secure' : ''
      return new Response(pages.paymentPage(params.ref, session, { csrf }), {
        status: session ? 200 : 404,
        headers: { ...PAGE_HEADERS, 'set-cookie': `${CSRF_COOKIE}=${csrf}; Path=/pay/${params.ref}/; HttpOnly; SameSite=Strict; Max-Age=3600${secure}` },
      })
    }, { public: true, detail: { hide: true } })
    // The form's own post (no scripts needed): application/x-www-form-urlencoded, card fields in
    // the body only. Paid: 303 to the page, which now says so. Otherwise the form again with why.
    .post('/pay/:ref/', async ({ params, body, request }) => {
      const form = body as Record<string, string>
      const cookie = cookieOf(request, CSRF_COOKIE)
      const session = pages.session(params.ref)
      if (!cookie || !form.csrf || !timingSafeEqualText(cookie, form.csrf)) {
        return new Response(pages.paymentPage(params.ref, session, { csrf: cookie ?? '', error: 'This form has expired or did not come from this page; reload the page and try again. Nothing was charged.' }), { status: 403, headers: PAGE_HEADERS })
      }
      const [month, year] = (form.exp ?? '').split('/').map((v) => Number.parseInt(v, 10))
      const result = await pages.submitCard(params.ref, { number: form.card ?? '', expMonth: month || 0, expYear: year || 0, cvc: form.cvc ?? '' })
      if (result.ok) return new Response(null, { status: 303, headers: { location: `/pay/${params.ref}/`, 'cache-control': 'no-store' } })
      const message = result.declined ? `${result.message} Try another card.` : result.message
      return new Response(pages.paymentPage(params.ref, pages.session(params.ref), { csrf: cookie, error: message }), { status: result.declined ? 402 : 422, headers: PAGE_HEADERS })
    }, { public: true, detail: { hide: true } })
    .post('/pay/:ref/confirm', async ({ params, body }) => {
      const result = await pages.submitCard(params.ref, { number: body.card_number, expMonth: body.exp_month, expYear: body.exp_year, cvc: body.cvc })
      if (!result.ok && result.declined) throw new PaymentDeclinedError(`${result.message} Try another card.`, 'card_number')
      if (!result.ok) throw new ValidationError(result.field === 'session' ? 'ref' : result.field === 'number' ? 'card_number' : result.field === 'expiry' ? 'exp_month' : 'cvc', result.message)
      return { paid: true }
    }, { public: true, body: CardBody, detail: { hide: true } })
