import { Type as t, type Static } from '@sinclair/typebox'
import { AiModuleSchema } from '../enums'

export const ModuleView = t.Object({
  name: AiModuleSchema,
  description: t.String(),
  included: t.Boolean({ description: "Whether the site's plan includes the module; only included modules can be turned on." }),
  enabled: t.Boolean(),
})
export type ModuleState = Static<typeof ModuleView>
