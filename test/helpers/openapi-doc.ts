import { spawnSync } from 'node:child_process'
import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import { END_GUARD, endsWithAnchor, topLevelBranches } from '../../src/api/http/pattern-text'

type Schema = Record<string, any>

/**
 * The published OpenAPI document as a reader of it sees it: operations by id, the JSON Schema
 * validator generated clients use (ajv, JSON Schema 2020-12, patterns with the `u` flag), and
 * Python's `re`, the engine of Schemathesis and hypothesis-jsonschema (issue 36).
 */
export class OpenApiDoc {
  readonly ajv = new Ajv2020({ strict: false })

  constructor(readonly doc: Schema) {
    addFormats(this.ajv)
    this.ajv.addSchema({ ...doc, $id: 'openapi' })
  }

  /** [method, path, operation] of an operationId. */
  operation(id: string): [string, string, Schema] {
    for (const [path, ops] of Object.entries(this.doc.paths as Record<string, Record<string, Schema>>)) {
      for (const [method, op] of Object.entries(ops)) if (op.operationId === id) return [method, path, op]
    }
    throw new Error(`no operation ${id}`)
  }

  /** Every operation, as [method, path, operation]. */
  operations(): [string, string, Schema][] {
    return Object.entries(this.doc.paths as Record<string, Record<string, Schema>>).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => [method, path, op] as [string, string, Schema]))
  }

  /** The schema of a body field of an operation (one level, `properties`). */
  bodyField(id: string, field: string): Schema {
    const schema = this.operation(id)[2].requestBody.content['application/json'].schema
    return schema.properties[field]
  }

  /** The schema of a parameter of an operation. */
  parameter(id: string, name: string): Schema {
    return (this.operation(id)[2].parameters as Schema[]).find((p) => p.name === name)!.schema
  }

  /** Whether the document accepts `body` for the operation `id`. */
  acceptsBody(id: string, body: unknown): boolean {
    const [method, path] = this.operation(id)
    const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1')
    return this.ajv.validate({ $ref: `openapi#/paths/${esc(path)}/${method}/requestBody/content/application~1json/schema` }, body) as boolean
  }

  /** Every `pattern` of the document, with where it stands and the examples beside it. */
  patterns(): { at: string; pattern: string; examples: unknown[] }[] {
    const found: { at: string; pattern: string; examples: unknown[] }[] = []
    const walk = (node: unknown, at: string): void => {
      if (typeof node !== 'object' || node === null) return
      const schema = node as Schema
      if (typeof schema.pattern === 'string') found.push({ at, pattern: schema.pattern, examples: Array.isArray(schema.examples) ? schema.examples : [] })
      for (const [key, value] of Object.entries(node)) if (key !== 'example' && key !== 'examples' && key !== 'pattern') walk(value, `${at}/${key}`)
    }
    walk(this.doc, '#')
    return found
  }
}

/** A string given as code points, so that a test can hold surrogate code points JSON cannot carry. */
export type CodePoints = number[]
export const codePoints = (text: string): CodePoints => [...text].map((c) => c.codePointAt(0)!)

const PYTHON = `
import json, re, sys, warnings
warnings.simplefilter('error')  # "possible nested set" and the like: a pattern Python reads otherwise
req = json.load(sys.stdin)
errors, compiled = {}, {}
for p in req['patterns']:
    try:
        compiled[p] = re.compile(p)
    except Exception as e:
        errors[p] = type(e).__name__ + ': ' + str(e)
def verdict(schema, cps):
    s = ''.join(chr(c) for c in cps)
    if 'minLength' in schema and len(s) < schema['minLength']: return False
    if 'maxLength' in schema and len(s) > schema['maxLength']: return False
    rules = [schema.get('pattern')] + [a.get('pattern') for a in schema.get('allOf', [])]
    rules = [compiled.get(p, False) for p in rules if p is not None]
    return all(r is not False and r.search(s) is not None for r in rules)
print(json.dumps({'errors': errors, 'verdicts': [verdict(s, cps) for s, cps in req['probes']]}))
`

/**
 * Compiles each pattern with python3's `re` (warnings as errors) and judges each probe against
 * a string schema as Python reads it: its pattern (and those of its `allOf`) searched over code points, and min/maxLength
 * counted in code points. `format` is left out on purpose: a reader that does not check it (or
 * checks RFC 5321's email) must still get the rule from the pattern.
 */
export function python(patterns: string[], probes: [Schema, CodePoints][] = []): { errors: Record<string, string>; verdicts: boolean[] } {
  const own = probes.flatMap(([s]) => [s.pattern, ...((s.allOf ?? []) as Schema[]).map((a) => a.pattern)]).filter((p): p is string => typeof p === 'string')
  const run = spawnSync('python3', ['-c', PYTHON], { input: JSON.stringify({ patterns: [...new Set([...patterns, ...own])], probes }), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  if (run.status !== 0) throw new Error(`python3 failed: ${run.stderr}`)
  return JSON.parse(run.stdout)
}

/**
 * Whether a pattern is anchored: every branch of its top-level alternation starts with `^` and
 * ends with an unescaped `$`, guarded against Python's final newline (`$(?!\n)`), so that it
 * judges the whole value, never a part of it, in every engine.
 */
export function anchored(pattern: string): boolean {
  return topLevelBranches(pattern).every((b) => b.startsWith('^') && b.endsWith(END_GUARD) && endsWithAnchor(b.slice(0, -END_GUARD.length)))
}
