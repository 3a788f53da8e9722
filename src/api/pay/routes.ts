import { Elysia, t } from 'elysia'
import type { LocalProcessor } from '../../drivers/payments/local'
import { renderPaymentPage } from '../../drivers/payments/local-page'
import { PaymentDeclinedError, ValidationError } from '../http/errors'
import { Body } from '../http/schemas'
import type { ApiPlugins } from '../plugins'

const CardBody = Body({
  card_number: t.String({ maxLength: 30 }),
  exp_month: t.Integer(),
  exp_year: t.Integer(),
  cvc: t.String({ maxLength: 8 }),
})

/**
 * The built-in processor's hosted page at {site_url}/pay/{ref}/ (outside /api/v1: it belongs to
 * the processor, as Stripe's checkout.stripe.com would). Mounted only with the local processor.
 */
export const payRoutes = (plugins: ApiPlugins, processor: LocalProcessor) =>
  new Elysia({ name: 'pay-routes' })
    .use(plugins)
    .get('/pay/:ref/', ({ params }) => {
      const session = processor.session(params.ref)
      return new Response(renderPaymentPage(params.ref, session), {
        status: session ? 200 : 404,
        headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer' },
      })
    }, { public: true, detail: { hide: true } })
    .post('/pay/:ref/confirm', async ({ params, body }) => {
      const result = await processor.submitCard(params.ref, { number: body.card_number, expMonth: body.exp_month, expYear: body.exp_year, cvc: body.cvc })
      if (!result.ok && result.declined) throw new PaymentDeclinedError(`${result.message} Try another card.`, 'card_number')
      if (!result.ok) throw new ValidationError(result.field === 'session' ? 'ref' : result.field === 'number' ? 'card_number' : result.field === 'expiry' ? 'exp_month' : 'cvc', result.message)
      return { paid: true }
    }, { public: true, body: CardBody, detail: { hide: true } })
