import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { linksOutRefused } from './deploy'
import { linksOutScript } from './release'

/**
 * A fetched or pushed tree's symbolic links (issue 39, "Hostile trees"): the script the deployment
 * runs in the site's container, run here by sh over a real tree, names the links that lead out of
 * the release, as the archive rules would (drivers/sources/tree-rules.ts), and only those.
 */
const root = mkdtempSync(join(tmpdir(), 'berth-links-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

it('names links to absolute paths, above the tree and through another link; keeps links inside it, dangling ones included', () => {
  const dir = join(root, 'app', 'releases', 'dep_1')
  mkdirSync(join(dir, 'sub', 'deep'), { recursive: true })
  writeFileSync(join(dir, 'index.html'), 'hi')
  const links: [string, string][] = [
    ['.berth', '/home/site'], ['public', '../../..'], ['sub/out', '../..'], ['sneak', 'public/..'], ['sub/deep/abs', '/etc/passwd'],
    ['ok.html', 'index.html'], ['sub/up.html', '../index.html'], ['sub/deep/top', '../..'], ['dangling', 'not there yet'], ['self', '.'],
  ]
  for (const [path, target] of links) symlinkSync(target, join(dir, path))
  const out = execFileSync('sh', ['-c', linksOutScript(dir)], { encoding: 'utf8' })
  expect(out.trim().split('\n').sort()).toEqual(['.berth -> /home/site', 'public -> ../../..', 'sneak -> public/..', 'sub/deep/abs -> /etc/passwd', 'sub/out -> ../..'])
  expect(linksOutRefused(['.berth -> /home/site'])).toMatch(/^The tree holds symbolic links that leave the tree \(\.berth -> \/home\/site\): .*Make them relative links inside the tree/)
})

it('prints nothing for a tree without links out, and at most 10 lines for a tree full of them', () => {
  const clean = join(root, 'clean')
  mkdirSync(clean)
  writeFileSync(join(clean, 'a'), 'a')
  symlinkSync('a', join(clean, 'b'))
  expect(execFileSync('sh', ['-c', linksOutScript(clean)], { encoding: 'utf8' })).toBe('')
  const many = join(root, 'many')
  mkdirSync(many)
  for (let i = 0; i < 30; i++) symlinkSync('/etc', join(many, `l${i}`))
  expect(execFileSync('sh', ['-c', linksOutScript(many)], { encoding: 'utf8' }).trim().split('\n')).toHaveLength(10)
})
