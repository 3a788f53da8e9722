import { t } from 'elysia'
import { ScopeSchema } from '../../core/enums'
import { Body, DateTime, Text } from '../http/schemas'
import { ClaimRequested, ClaimedKey } from '../../domain/claims'
export { ClaimRequested, ClaimedKey }

export const ClaimRequestBody = Body({
  site_slug: Text({ minLength: 1, maxLength: 100, description: 'The site whose files you can read.' }),
})

export const ClaimBody = Body({
  claim_token: Text({ minLength: 1, maxLength: 200, description: 'The contents of the token file, without the trailing newline.' }),
})
