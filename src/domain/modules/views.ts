import { Type as t, type Static } from '@sinclair/typebox'
import { AiModuleSchema } from '../../core/enums'

export const ModuleView = t.Object({
  name: AiModuleSchema,
  description: t.String(),
  included: t.Boolean({ description: "Whether the site's plan includes the module; only included modules can be turned on." }),
  enabled: t.Boolean(),
  available: t.Boolean({ description: 'Whether this server can run the module: translation and content need an AI provider configured by the hoster.' }),
  unavailable_reason: t.Union([t.String(), t.Null()], { description: 'Why not, naming the config key the hoster sets; null when available.' }),
  uses_ai_provider: t.Boolean({ description: "Whether the module's work goes through the AI provider (and counts against the site's monthly tokens)." }),
  ai_tokens: t.Union([t.Object({ monthly: t.Integer(), used_this_month: t.Integer() }), t.Null()], { description: "The site's monthly allowance of model tokens (its plan's ai_tokens_monthly, shared by its modules) and this UTC month's use; null without a provider, and for seo, which never calls the model." }),
})
export type ModuleState = Static<typeof ModuleView>
