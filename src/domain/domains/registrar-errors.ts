import type { RegistrarError } from '../../drivers/registrar/types'
import { conflict, type DomainError, invalid, notFound, paymentDeclined, unavailable } from '../errors'

/** The registrar's refusal as the domain error an agent reads: what happened and what to do. */
export function registrarError(err: RegistrarError): DomainError {
  switch (err.kind) {
    case 'taken':
      return conflict(`${err.message} Search another name.`, 'domain')
    case 'invalid':
      return invalid(err.param, `The registry refused the registration: ${err.message}`)
    case 'funds':
      return paymentDeclined(`The registrar could not take payment for this registration (${err.message}); nothing was registered and any charge was refunded. Retry later.`, null)
    case 'not_found':
      return notFound(`The registrar does not know this domain: ${err.message}`, 'domain_name')
    case 'unreachable':
      return unavailable(`The domain registrar is not answering (${err.message}); nothing changed. Retry in a minute.`)
  }
}
