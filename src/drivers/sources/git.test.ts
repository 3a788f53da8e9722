import { describe, expect, it } from 'vitest'
import { InvalidGitSourceError } from './errors'
import { checkGitRef, gitFetchCommand, parseGitUrl, readGitFetch } from './git'

/** Issue 39, item 1: which git URLs and refs Berth takes, and the fetch command's shape (run for real in git-fetch.service.test.ts). */
function refusal(f: () => unknown): string {
  try {
    f()
  } catch (err) {
    if (err instanceof InvalidGitSourceError) return `${err.param}: ${err.message}`
    throw err
  }
  return 'accepted'
}

describe('git URLs', () => {
  it.each([
    ['https://github.com/owner/repo.git', { transport: 'https', host: 'github.com', port: 443, url: 'https://github.com/owner/repo.git' }],
    ['https://GitLab.Example:8443/group/sub/repo', { transport: 'https', host: 'gitlab.example', port: 8443, url: 'https://gitlab.example:8443/group/sub/repo' }],
    ['https://0x7f000001/r.git', { transport: 'https', host: '127.0.0.1', port: 443 }],
    ['https://[2606:4700::1111]/r.git', { transport: 'https', host: '2606:4700::1111', port: 443 }],
    ['http://10.248.1.2/r.git', { transport: 'http', host: '10.248.1.2', port: 80 }],
    ['ssh://git@github.com/owner/repo.git', { transport: 'ssh', host: 'github.com', port: 22 }],
    ['ssh://git@host.example:2222/repo.git', { transport: 'ssh', host: 'host.example', port: 2222 }],
    ['https://github.com/o/../../r.git', { transport: 'https', url: 'https://github.com/r.git' }],
    ['git@github.com:owner/repo.git', { transport: 'ssh', host: 'github.com', port: 22, url: 'git@github.com:owner/repo.git' }],
  ])('%s is taken', (text, expected) => {
    expect(parseGitUrl(text)).toMatchObject(expected)
  })

  it.each([
    ['file:///etc/passwd', 'https:// and ssh:// only (not file://)'],
    ['ext::sh -c touch% /tmp/pwned', 'may not hold spaces'],
    ['ext::nc%20evil%2022', "git's remote helpers (ext::, fd:: and the like) are not taken"],
    ['fd::17', "git's remote helpers"],
    ['git://github.com/owner/repo.git', 'https:// and ssh:// only (not git://)'],
    ['--upload-pack=touch /tmp/x', 'may not start with "-"'],
    ['-oProxyCommand=x', 'may not start with "-"'],
    ['git@host:-oProxyCommand=evil', 'not one Berth fetches'],
    ['ssh://-oProxyCommand=evil/x', '"-oProxyCommand=evil" is not a host name'],
    ['ssh://-oProxyCommand=evil@host/x', 'The user name "-oProxyCommand=evil" is not one Berth takes'],
    ['https://user:ghp_secret@github.com/o/r.git', 'may not carry a password or token'],
    ['https://github.com/o/r.git?x=1', 'no query or fragment'],
    ['https://github.com/', 'The URL names no repository (its path is "/")'],
    ['not a url', 'may not hold spaces'],
    ['github.com/owner/repo', 'is not a URL'],
  ])('%s is refused', (text, words) => {
    const why = refusal(() => parseGitUrl(text))
    expect(why).toContain('source.git: ')
    expect(why).toContain(words)
  })
})

describe('git refs', () => {
  it('takes a branch, a tag and a full commit sha', () => {
    expect(checkGitRef('main')).toEqual({ ref: 'main', commit: false })
    expect(checkGitRef('release/2026-11')).toEqual({ ref: 'release/2026-11', commit: false })
    expect(checkGitRef('v1.2.0')).toEqual({ ref: 'v1.2.0', commit: false })
    expect(checkGitRef('a'.repeat(40))).toEqual({ ref: 'a'.repeat(40), commit: true })
  })

  it.each([
    ['', 'is empty'], ['-b', 'starts with "-"'], ['--upload-pack=x', 'starts with "-"'], ['abc1234', 'short commit sha'],
    ['main..dev', 'may not'], ['a b', 'may not'], ['HEAD~1', 'may not'], ['x:y', 'may not'], ['@{-1}', 'may not'],
    ['/main', 'well-formed'], ['main.lock', 'well-formed'], ['.hidden', 'well-formed'],
  ])('%j is refused', (ref, words) => {
    const why = refusal(() => checkGitRef(ref))
    expect(why).toContain('source.ref: ')
    expect(why).toContain(words)
  })
})

describe('the fetch command', () => {
  const base = { dir: '/home/site/app/releases/dep_1', scratch: '/tmp/berth/git-dep_1', ref: checkGitRef('main') }

  it('pins https to the address checked, sends a token only in the env, allows only its transport', () => {
    const f = gitFetchCommand({ ...base, url: parseGitUrl('https://github.com/o/r.git'), pinned: { address: '140.82.112.3', family: 4, listed: false }, credentials: { token: { value: 'ghp_abc' } } })
    expect(f.argv.slice(0, 5)).toEqual(['timeout', '-k', '5', '300', 'sh'])
    expect(f.argv.slice(-4)).toEqual(['berth-git-fetch', base.dir, 'https://github.com/o/r.git', 'main'])
    expect(f.argv.join(' ')).not.toContain('ghp_abc')
    const config = Object.fromEntries(Array.from({ length: Number(f.env.GIT_CONFIG_COUNT) }, (_, i) => [f.env[`GIT_CONFIG_KEY_${i}`], f.env[`GIT_CONFIG_VALUE_${i}`]]))
    expect(config).toMatchObject({
      'protocol.allow': 'never', 'protocol.https.allow': 'always', 'http.followRedirects': 'false',
      'http.curloptResolve': 'github.com:443:140.82.112.3',
      'http.extraHeader': `Authorization: Basic ${Buffer.from('x-access-token:ghp_abc').toString('base64')}`,
    })
    expect(f.env).toMatchObject({ GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0' })
    expect(f.files).toEqual([])
    expect(f.timeoutMs).toBe(310_000)
  })

  it('pins ssh with HostName and writes the deploy key to a 0600 file', () => {
    const f = gitFetchCommand({ ...base, url: parseGitUrl('git@github.com:o/r.git'), pinned: { address: '2606:50c0::1', family: 6, listed: false }, credentials: { deployKey: 'KEY' } })
    expect(f.env.GIT_SSH_COMMAND).toContain('-o HostName=2606:50c0::1')
    expect(f.env.GIT_SSH_COMMAND).toContain(`-i ${base.scratch}/deploy_key`)
    expect(f.files).toEqual([{ path: `${base.scratch}/deploy_key`, content: 'KEY\n', mode: 0o600 }])
  })

  it('takes http:// only from a listed network, and never a token over it', () => {
    const url = parseGitUrl('http://10.248.1.2/r.git')
    expect(refusal(() => gitFetchCommand({ ...base, url, pinned: { address: '10.248.1.2', family: 4, listed: false } }))).toContain('only from a network the hoster lists in outbound.allow_networks')
    expect(refusal(() => gitFetchCommand({ ...base, url, pinned: { address: '10.248.1.2', family: 4, listed: true }, credentials: { token: { value: 't' } } }))).toContain('A token is never sent over http://')
    expect(gitFetchCommand({ ...base, url, pinned: { address: '10.248.1.2', family: 4, listed: true } }).argv).toContain('http://10.248.1.2/r.git')
  })

  it('reads the answer: the commit and submodules, a time-out, a failure with what git said', () => {
    expect(readGitFetch(0, `x\nberth-git: commit ${'b'.repeat(40)} submodules yes\n`)).toEqual({ commit: 'b'.repeat(40), submodules: true })
    expect(readGitFetch(124, '')).toEqual({ error: 'The git fetch did not finish within 300 s; fetch a smaller repository or ref.' })
    expect((readGitFetch(128, 'fatal: repository not found') as { error: string }).error).toContain('git said:\nfatal: repository not found')
  })
})
