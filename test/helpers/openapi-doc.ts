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

const SAMPLER = `
import json, random, re, sys, warnings
from re import _parser as P, _constants as C
warnings.simplefilter('error')
# Characters to draw from: printable ASCII, and the kinds the rules single out (accents, CJK, an
# emoji, look-alikes of '.' and '/', spaces, separators and controls), never a surrogate.
POOL = [chr(c) for c in list(range(0x20, 0x7f)) + [0x0, 0x9, 0xa, 0x85, 0xa0, 0xe9, 0xfc, 0x3b1, 0x444, 0x65e5, 0x672c, 0x2024, 0x2028, 0x2215, 0x3000, 0xff0e, 0x1f100, 0x1f680]]
CATEGORIES = {
    C.CATEGORY_DIGIT: lambda c: c.isdigit() and c.isascii(), C.CATEGORY_NOT_DIGIT: lambda c: not (c.isdigit() and c.isascii()),
    C.CATEGORY_SPACE: lambda c: re.match(r'\\s', c) is not None, C.CATEGORY_NOT_SPACE: lambda c: re.match(r'\\s', c) is None,
    C.CATEGORY_WORD: lambda c: re.match(r'\\w', c) is not None, C.CATEGORY_NOT_WORD: lambda c: re.match(r'\\w', c) is None,
}
def member(items, c):
    negate, hit = False, False
    for op, av in items:
        if op == C.NEGATE: negate = True
        elif op == C.LITERAL: hit = hit or ord(c) == av
        elif op == C.RANGE: hit = hit or av[0] <= ord(c) <= av[1]
        elif op == C.CATEGORY: hit = hit or CATEGORIES[av](c)
        else: raise ValueError(op)
    return hit != negate
def draw(parsed, rnd):
    out = []
    for op, av in parsed:
        if op == C.LITERAL: out.append(chr(av))
        elif op == C.NOT_LITERAL: out.append(rnd.choice([c for c in POOL if ord(c) != av]))
        elif op == C.ANY: out.append(rnd.choice([c for c in POOL if c != '\\n']))
        elif op == C.IN:
            choices = [c for c in POOL if member(av, c)]
            if not choices: raise LookupError('an empty class')
            out.append(rnd.choice(choices))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            top = lo + rnd.choice([0, 1, 2, 4, 8, 64])
            for _ in range(rnd.randint(lo, top if hi == C.MAXREPEAT else min(hi, top))): out.append(draw(sub, rnd))
        elif op == C.SUBPATTERN: out.append(draw(av[-1], rnd))
        elif op == C.BRANCH: out.append(draw(rnd.choice(av[1]), rnd))
        elif op in (C.AT, C.ASSERT, C.ASSERT_NOT): pass  # judged after the draw
        else: raise ValueError(op)
    return ''.join(out)
def valid(schema, s):
    if len(s) < schema.get('minLength', 0) or len(s) > schema.get('maxLength', 1 << 30): return False
    rules = [schema.get('pattern')] + [a.get('pattern') for a in schema.get('allOf', [])]
    return all(re.search(p, s) is not None for p in rules if p is not None)
req = json.load(sys.stdin)
out = []
for i, (schema, count) in enumerate(req['schemas']):
    rnd = random.Random(req['seed'] * 7919 + i)
    drawn = [p for p in [schema.get('pattern')] + [a.get('pattern') for a in schema.get('allOf', [])] if p is not None][0]
    parsed = P.parse(drawn)
    found = []
    for _ in range(4000):
        if len(found) == count: break
        s = draw(parsed, rnd)
        if valid(schema, s) and s not in found: found.append(s)
    out.append(found)
print(json.dumps(out))
`

/**
 * Values valid for each string schema as Python reads it (pattern, allOf patterns, lengths),
 * drawn from its first pattern the way a generator such as hypothesis does (lookarounds and
 * anchors judged after the draw), with a fixed seed: the same values at every run.
 */
export function samples(schemas: Schema[], count: number, seed = 36): string[][] {
  const run = spawnSync('python3', ['-c', SAMPLER], { input: JSON.stringify({ seed, schemas: schemas.map((s) => [s, count]) }), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  if (run.status !== 0) throw new Error(`python3 failed: ${run.stderr}`)
  return JSON.parse(run.stdout)
}
