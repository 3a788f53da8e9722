import { describe, expect, it } from 'vitest'
import { planBuild, TreeRefusedError, type TreeFacts } from './detect'
import { parseFacts, processCommand, releaseJson } from './release'

const tree = (entries: string[], files: TreeFacts['files'] = {}, publicHas = { index: false, php: false }): TreeFacts => ({ entries, files, publicHas })
const pkg = (scripts: Record<string, string>, extra: Record<string, unknown> = {}) => JSON.stringify({ name: 'x', scripts, ...extra })

describe('planBuild: the detection table', () => {
  it('package.json with a lockfile: npm ci, the build script, npm start', () => {
    const plan = planBuild(tree(['package.json', 'package-lock.json', 'src/'], { 'package.json': pkg({ build: 'tsc', start: 'node dist/server.js' }) }))
    expect(plan).toMatchObject({ runtime: 'node', install: 'npm ci', build: 'npm run build', processes: { web: 'npm start' }, persistent: ['data'], healthPath: '/' })
  })

  it('picks pnpm and yarn by their lockfiles, npm install without one, and a server.js without a start script', () => {
    expect(planBuild(tree(['package.json', 'pnpm-lock.yaml'], { 'package.json': pkg({ start: 'x' }) })).install).toBe('corepack pnpm install --frozen-lockfile')
    expect(planBuild(tree(['package.json', 'yarn.lock'], { 'package.json': pkg({ start: 'x' }) })).processes.web).toBe('corepack yarn run start')
    const bare = planBuild(tree(['package.json', 'server.js'], { 'package.json': pkg({}) }))
    expect(bare).toMatchObject({ install: 'npm install', build: null, processes: { web: 'node server.js' } })
  })

  it('a build script without a start script is a static site served from its output (found after the build)', () => {
    const plan = planBuild(tree(['package.json', 'package-lock.json', 'index.html'], { 'package.json': pkg({ build: 'vite build' }) }))
    expect(plan).toMatchObject({ runtime: 'static', build: 'npm run build', processes: {}, staticRoot: null })
  })

  it('bun.lock is Bun; requirements.txt is Python in a virtualenv; composer.json is PHP; index.html alone is static', () => {
    expect(planBuild(tree(['bun.lock', 'package.json', 'index.ts'], { 'package.json': pkg({}) }))).toMatchObject({ runtime: 'bun', install: 'bun install --frozen-lockfile', processes: { web: 'bun index.ts' } })
    const py = planBuild(tree(['requirements.txt', 'app.py'], { 'requirements.txt': '# nothing from the index\n' }))
    expect(py).toMatchObject({ runtime: 'python', install: 'python3 -m venv .venv', processes: { web: 'python app.py' } })
    expect(planBuild(tree(['requirements.txt', 'main.py'], { 'requirements.txt': 'flask==3.0\n' })).install).toBe('python3 -m venv .venv && .venv/bin/pip install --no-input -r requirements.txt')
    expect(planBuild(tree(['composer.json', 'public/'], {}, { index: false, php: true }))).toMatchObject({ runtime: 'php', staticRoot: 'public', processes: {} })
    expect(planBuild(tree(['index.html', 'style.css']))).toMatchObject({ runtime: 'static', staticRoot: '.' })
    expect(planBuild(tree(['public/'], {}, { index: true, php: false }))).toMatchObject({ runtime: 'static', staticRoot: 'public' })
  })

  it('a Procfile declares the processes and the release command; berth.json wins over both', () => {
    const procfile = 'web: node web.js\nworker: node worker.js\nrelease: node migrate.js\n'
    const plan = planBuild(tree(['package.json', 'Procfile'], { 'package.json': pkg({ start: 'node x.js' }), Procfile: procfile }))
    expect(plan).toMatchObject({ processes: { web: 'node web.js', worker: 'node worker.js' }, release: 'node migrate.js' })
    const declared = planBuild(tree(['package.json', 'Procfile', 'berth.json'], {
      'package.json': pkg({ start: 'node x.js' }), Procfile: procfile,
      'berth.json': JSON.stringify({ processes: { web: 'node other.js' }, health_path: '/healthz', persistent: ['uploads'], build: null, stop_grace_seconds: 20 }),
    }))
    expect(declared).toMatchObject({ processes: { web: 'node other.js' }, healthPath: '/healthz', persistent: ['uploads'], build: null, stopGraceSeconds: 20 })
  })

  it('refuses what it cannot run, saying what to add', () => {
    expect(() => planBuild(tree(['README.md']))).toThrow(/berth\.json/)
    expect(() => planBuild(tree(['package.json'], { 'package.json': pkg({}) }))).toThrow(/web process/)
    expect(() => planBuild(tree(['berth.json'], { 'berth.json': '{"runtime": "ruby"}' }))).toThrow(TreeRefusedError)
    expect(() => planBuild(tree(['berth.json', 'index.html'], { 'berth.json': '{"runtim": "node"}' }))).toThrow(/unknown fields \(runtim\)/)
    expect(() => planBuild(tree(['berth.json', 'index.html'], { 'berth.json': '{"persistent": ["../etc"]}' }))).toThrow(/persistent/)
    expect(() => planBuild(tree(['berth.json', 'index.html'], { 'berth.json': '{"static_root": "../.."}' }))).toThrow(/static_root/)
    expect(() => planBuild(tree(['berth.json', 'index.html'], { 'berth.json': 'not json' }))).toThrow(/not valid JSON/)
    expect(() => planBuild(tree(['Procfile', 'index.html'], { Procfile: 'this is no procfile' }))).toThrow(/Procfile line 1/)
  })
})

describe('the release folder as the supervisor reads it', () => {
  it('parses the facts script\'s output, files in base64', () => {
    const b64 = Buffer.from('{"scripts":{}}').toString('base64')
    expect(parseFacts(`@entry package.json\n@entry src/\n@public index\n@file package.json ${b64}\n@file evil.sh AAAA\n`)).toEqual({
      entries: ['package.json', 'src/'], publicHas: { index: true, php: false }, files: { 'package.json': '{"scripts":{}}' },
    })
  })

  it('a Python process runs in the release\'s virtualenv, a node one in production, and a list of commands is kept whole', () => {
    expect(processCommand('python', 'gunicorn app:app')).toBe('export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH"; exec gunicorn app:app')
    expect(processCommand('node', 'npm start')).toBe('export NODE_ENV="${NODE_ENV:-production}"; exec npm start')
    expect(processCommand('node', 'node migrate.js && node server.js')).toContain('; node migrate.js && node server.js')
    const manifest = JSON.parse(releaseJson('d1', planBuild(tree(['index.html'])), '.'))
    expect(manifest).toEqual({ id: 'd1', runtime: 'static', processes: {}, static_root: '.', health_path: '/', stop_grace_seconds: 10 })
  })
})
