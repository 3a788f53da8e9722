import { defineConfig } from 'drizzle-kit'

// Used only at development time by `bun run db:generate`; the binary embeds the generated SQL.
export default defineConfig({
  dialect: 'sqlite',
  schema: './src/store/schema/index.ts',
  out: './src/store/migrations',
})
