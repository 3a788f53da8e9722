import { Type as t, type Static } from '@sinclair/typebox'
import { AiModuleSchema } from '../enums'

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

/** One search-engine problem of a page (the seo report). */
export interface SeoProblem {
  code: 'missing_title' | 'long_title' | 'missing_description' | 'long_description' | 'missing_h1' | 'several_h1' | 'missing_canonical' | 'missing_og' | 'missing_lang' | 'images_without_alt' | 'no_head'
  message: string
  /** True when the seo module adds what is missing as the page is served (the file itself is not changed). */
  fixed_at_edge: boolean
}

/** Each HTML page's search-engine problems (GET /sites/{slug}/modules/seo/report/). */
export interface SeoReport {
  pages_checked: number
  pages_with_problems: number
  /** True when more pages exist than were checked. */
  truncated: boolean
  pages: { url: string; file: string; title: string | null; problems: SeoProblem[] }[]
}

/** What the content module is asked to write (POST /sites/{slug}/modules/content/generate/). */
export interface ContentBrief {
  brief: string
  path: string
  overwrite?: boolean
  language?: string
}

/** A page the content module wrote. */
export interface GeneratedPage {
  path: string
  url: string
  title: string | null
  bytes: number
  overwritten: boolean
  tokens_used: number
}
