import { t } from 'elysia'
import { AiModuleSchema } from '../../domain/enums'
import { Body } from '../http/schemas'
import { ModuleView } from '../../domain/modules/views'
export { ModuleView }

export const ModuleParams = t.Object({
  tenant_slug: t.String({ maxLength: 100 }),
  module_name: t.String({ maxLength: 100, description: 'chatbot, seo, translation or content.' }),
})

export const ToggleModuleBody = Body({
  enabled: t.Optional(t.Boolean({ description: 'The state to set. Without it the module flips: on becomes off, off becomes on.' })),
}, { description: 'Optional; an empty body flips the module.' })
