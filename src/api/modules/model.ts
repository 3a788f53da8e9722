import { t } from 'elysia'
import { AiModuleSchema } from '../../core/enums'
import { Body, Text } from '../http/schemas'
import { GeneratedPage, ModuleView, SeoReport } from '../../domain/modules'
export { GeneratedPage, ModuleView, SeoReport }

export const ModuleParams = t.Object({
  tenant_slug: t.String({ maxLength: 100 }),
  module_name: t.String({ maxLength: 100, description: 'chatbot, seo, translation or content.' }),
})

export const ToggleModuleBody = Body({
  enabled: t.Optional(t.Boolean({ description: 'The state to set. Without it the module flips: on becomes off, off becomes on.' })),
}, { description: 'Optional; an empty body flips the module.' })

export const GenerateContentBody = Body({
  brief: Text({ minLength: 10, maxLength: 4000, description: 'What the page is about, for whom, and anything it must say.' }),
  path: Text({ minLength: 8, maxLength: 255, description: 'Where to write it, under public/ and ending in .html.', examples: ['public/about.html'] }),
  overwrite: t.Optional(t.Boolean({ description: 'Replace the file if it exists; without it an existing file answers 409.' })),
  language: t.Optional(t.Union(['en', 'fr', 'es', 'de', 'it', 'pt', 'nl'].map((l) => t.Literal(l)), { description: 'The language to write in (en by default).' })),
})
