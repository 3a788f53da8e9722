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

/** The seo module's report on a site's pages (GET /sites/{slug}/modules/seo/report/). */
export const SeoReport = t.Object({
  pages_checked: t.Integer({ minimum: 0 }),
  pages_with_problems: t.Integer({ minimum: 0 }),
  truncated: t.Boolean({ description: 'True when the site has more than the 1,000 pages checked.' }),
  pages: t.Array(t.Object({
    url: t.String({ description: 'The path visitors use, e.g. /about/.' }),
    file: t.String({ description: "The page's file under the site's home, e.g. public/about/index.html." }),
    title: t.Union([t.String(), t.Null()]),
    problems: t.Array(t.Object({
      code: t.String({ examples: ['missing_description'] }),
      message: t.String(),
      fixed_at_edge: t.Boolean({ description: 'True when the seo module (on) adds what is missing as the page is served.' }),
    })),
  })),
})
export type SeoReport = Static<typeof SeoReport>

/** The page the content module wrote (POST /sites/{slug}/modules/content/generate/). */
export const GeneratedPage = t.Object({
  path: t.String(),
  url: t.String({ format: 'uri' }),
  title: t.Union([t.String(), t.Null()]),
  bytes: t.Integer({ minimum: 0 }),
  overwritten: t.Boolean(),
  tokens_used: t.Integer({ minimum: 0 }),
})
export type GeneratedPage = Static<typeof GeneratedPage>

/** What the content module is asked to write (POST /sites/{slug}/modules/content/generate/). */
export interface ContentBrief {
  brief: string
  path: string
  overwrite?: boolean
  language?: string
}

