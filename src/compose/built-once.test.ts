import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * Every object of the composition is made once (issue 37): the same repository built in two places
 * drifts (two of the four SitesRepository were made without the SSH-port policy, so setPlan and
 * replaceSshPort through them assigned no port), and two archive stores over one folder are two
 * owners of one thing.
 * Counted on the sources of src/compose/: where each repository and the archive store is made.
 */
const COMPOSE = import.meta.dirname

/** `new X(` (or an area's `makeX(`) of a repository or the archive store, by class, with the files that make it. */
function constructions(files: Record<string, string>): Map<string, string[]> {
  const found = new Map<string, string[]>()
  for (const [file, text] of Object.entries(files)) {
    for (const [, cls] of text.matchAll(/\b(?:new |make)(\w+Repository|LocalArchiveStore)\(/g)) found.set(cls!, [...(found.get(cls!) ?? []), file])
  }
  return found
}

/**
 * Made twice, each for a reason that outlives this check, or until the work that removes it:
 * - LocalArchiveStore in restore.ts: `berth restore`'s first half lands the archives before there
 *   is a store to build the composition on; in offsite.ts, for a test that builds the copier alone.
 * - NodesRepository in cluster-ops.ts: the node operations built over the tests' cluster doubles,
 *   which have no cluster core to take it from.
 */
const ALLOWED: Record<string, string[]> = {
  LocalArchiveStore: ['core.ts', 'offsite.ts', 'restore.ts'],
  NodesRepository: ['cluster-ops.ts', 'cluster-ops.ts', 'cluster.ts'],
  AuditRepository: ['shell.ts', 'sites.ts'],
}

function twice(files: Record<string, string>): string[] {
  return [...constructions(files)].flatMap(([cls, where]) => (where.length > 1 && JSON.stringify(where.sort()) !== JSON.stringify(ALLOWED[cls]) ? [`${cls}: made in ${where.join(', ')}`] : []))
}

describe('the composition makes each object once', () => {
  const sources = Object.fromEntries(readdirSync(COMPOSE).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts')).map((f) => [f, readFileSync(join(COMPOSE, f), 'utf8')]))

  it('each repository and the archive store in one place of src/compose/', () => {
    expect(twice(sources)).toEqual([])
    expect(constructions(sources).get('SitesRepository')).toEqual(['core.ts'])
  })

  it('finds one made twice', () => {
    expect(twice({ 'core.ts': 'new SitesRepository(store, policy)', 'admin.ts': 'const sites = new SitesRepository(s.store)' })).toEqual(['SitesRepository: made in admin.ts, core.ts'])
  })
})

/**
 * No bag (issue 37 item 2): the composition hands each role its facades (compose/app.ts buildApp),
 * so no file exports a type named `Services`, and the areas' builder (compose/areas.ts buildAreas,
 * once buildServices) is compose/'s own: nothing outside src/compose/ imports it.
 */
const SRC = join(COMPOSE, '..')
const TEST = join(SRC, '..', 'test')

/** Every .ts file under `dir`, as its path relative to `root`, with its text. */
function sourcesUnder(dir: string, root: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue
    const path = join(entry.parentPath, entry.name)
    out[path.slice(root.length + 1)] = readFileSync(path, 'utf8')
  }
  return out
}

/** What breaks the rule: a file exporting a type `Services`, or one outside compose/ importing the areas' builder (a statement at a line's start: the architecture tests' planted imports are strings). */
export function bagProblems(files: Record<string, string>): string[] {
  const problems: string[] = []
  for (const [file, text] of Object.entries(files)) {
    if (/^export\s+(?:type|interface)\s+Services\b/m.test(text)) problems.push(`${file} exports a type named Services`)
    if (file.startsWith('src/compose/')) continue
    if (/^import\b[^;]*\b(?:buildServices|buildAreas)\b[^;]*\bfrom\b/m.test(text)) problems.push(`${file} imports the areas' builder from outside src/compose/`)
  }
  return problems
}

describe('no Services bag', () => {
  it('no file exports a type named Services; nothing outside src/compose/ imports buildServices or buildAreas', () => {
    const root = join(SRC, '..')
    const files = { ...sourcesUnder(SRC, root), ...sourcesUnder(TEST, root) }
    expect(Object.keys(files).length).toBeGreaterThan(100)
    expect(bagProblems(files)).toEqual([])
  })

  it('finds a planted bag and a planted import', () => {
    expect(bagProblems({
      'src/compose/index.ts': 'export type Services = Core & Sites',
      'src/server.ts': "import { buildAreas } from './compose/areas'",
      'test/helpers/x.ts': "import {\n  buildServices,\n  databasePath,\n} from '../../src/compose'",
      'src/compose/app.ts': "import { buildAreas } from './areas'",
    })).toEqual([
      'src/compose/index.ts exports a type named Services',
      "src/server.ts imports the areas' builder from outside src/compose/",
      "test/helpers/x.ts imports the areas' builder from outside src/compose/",
    ])
  })
})
