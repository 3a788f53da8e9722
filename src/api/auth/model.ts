import { t } from 'elysia'
import { ScopeSchema } from '../../core/enums'
import { KeyName } from '../keys/model'
import { Body, Email, Nullable, Uuid } from '../http/schemas'
import { Whoami } from '../../domain/auth'
export { Whoami }

export const RegisterBody = Body({
  name: t.Optional(KeyName),
  email: t.Optional(Email({ description: 'Optional contact address for the account.' })),
})
