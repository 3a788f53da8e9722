import { t } from 'elysia'
import { ScopeSchema } from '../../core/enums'
import { KeyName } from '../keys/model'
import { Body, Nullable, Text, Uuid } from '../http/schemas'
import { Whoami } from '../../domain/auth/views'
export { Whoami }

export const RegisterBody = Body({
  name: t.Optional(KeyName),
  email: t.Optional(Text({ format: 'email', maxLength: 254, description: 'Optional contact address for the account.' })),
})
