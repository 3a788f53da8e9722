import { t } from 'elysia'
import { AiModuleSchema } from '../../core/enums'
import { Body, JsonInteger, Text } from '../http/schemas'
import { ModuleView } from '../../domain/modules/views'
export { ModuleView }

export const ModuleParams = t.Object({
  tenant_slug: t.String({ maxLength: 100 }),
  module_name: t.String({ maxLength: 100, description: 'chatbot, seo, translation or content.' }),
})

export const ToggleModuleBody = Body({
  enabled: t.Optional(t.Boolean({ description: 'The state to set. Without it the module flips: on becomes off, off becomes on.' })),
}, { description: 'Optional; an empty body flips the module.' })

export const SeoReport = t.Object({
  pages_checked: JsonInteger({ minimum: 0 }),
  pages_with_problems: JsonInteger({ minimum: 0 }),
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

export const GenerateContentBody = Body({
  brief: Text({ minLength: 10, maxLength: 4000, description: 'What the page is about, for whom, and anything it must say.' }),
  path: Text({ minLength: 8, maxLength: 255, description: 'Where to write it, under public/ and ending in .html.', examples: ['public/about.html'] }),
  overwrite: t.Optional(t.Boolean({ description: 'Replace the file if it exists; without it an existing file answers 409.' })),
  language: t.Optional(t.Union(['en', 'fr', 'es', 'de', 'it', 'pt', 'nl'].map((l) => t.Literal(l)), { description: 'The language to write in (en by default).' })),
})

export const GeneratedPage = t.Object({
  path: t.String(),
  url: t.String({ format: 'uri' }),
  title: t.Union([t.String(), t.Null()]),
  bytes: JsonInteger({ minimum: 0 }),
  overwritten: t.Boolean(),
  tokens_used: JsonInteger({ minimum: 0 }),
})
