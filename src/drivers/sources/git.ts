import { InvalidGitSourceError } from './errors'

/**
 * A git source (issue 39, item 1): the URL and ref checked, and the command that fetches the
 * tree inside the site's container (berth/app:1 has git), as the site's user, into the release's
 * folder. Berth runs the outbound check (drivers/net/outbound.ts) on the URL's host first and
 * hands the address it checked to `gitFetchCommand`, which pins the fetch to it.
 *
 * URLs: `https://HOST[:PORT]/PATH`; `ssh://[USER@]HOST[:PORT]/PATH` and scp-like
 * `USER@HOST:PATH` (a deploy key); `http://` only when the address checked lies in
 * `outbound.allow_networks` (a hoster's own network; `listed`), and never with a token. No
 * password in a URL (a token is a secret of the site, passed apart), no `file://`, `ext::` or
 * other transport, nothing starting with `-`.
 *
 * The fetch: `git init`, then one shallow `git fetch --depth 1 --no-tags --no-recurse-submodules`
 * of the ref (a branch, a tag or a full commit sha: protocol v2 servers, GitHub's among them,
 * give a commit reachable from a ref), a checkout of FETCH_HEAD, `.git` removed (the release is
 * the tree, as Heroku's slug is), and one last line `berth-git: commit SHA submodules yes|no`.
 * Its git reads no system or global config (the site's ~/.gitconfig cannot rewrite the URL),
 * allows only the URL's transport (`protocol.allow=never`: no `file://` or `ext::` through a
 * redirect or a submodule), follows no redirect (it would reach a host nobody checked), asks for
 * no password on a terminal, and is killed after `timeoutSeconds` (`timeout`, exit 124). Its
 * size is bounded by the site's disk, where it writes.
 */
export type GitTransport = 'https' | 'http' | 'ssh'

export interface GitUrl {
  transport: GitTransport
  /** What git is given: the URL as parsed (host lower-cased, numeric forms written out). */
  url: string
  /** The host to check and pin (IPv6 without brackets). */
  host: string
  port: number
}

export interface GitRef {
  ref: string
  commit: boolean
}

export interface GitCredentials {
  /** A token, sent as HTTP Basic (`user`, default x-access-token, as GitHub and Gitea take it; oauth2 for GitLab). */
  token?: { value: string; user?: string }
  /** A private key (OpenSSH PEM) for ssh URLs. */
  deployKey?: string
}

export interface GitFetchInput {
  url: GitUrl
  ref: GitRef
  /** The address the outbound check answered, and whether allow_networks let it through. */
  pinned: { address: string; family: 4 | 6; listed: boolean }
  /** The folder the tree goes into (absolute; made by the fetch). */
  dir: string
  /** A private folder for the fetch's files (the key, known_hosts, a CA): under /tmp, removed after. */
  scratch: string
  credentials?: GitCredentials
  /** A CA bundle (PEM) to trust besides the system's (a git server of the hoster's own network). */
  caBundle?: string
  timeoutSeconds?: number
}

/** The exec: argv, env on top of the container's, the files to write (0600) first, the time limit. */
export interface GitFetch {
  argv: string[]
  env: Record<string, string>
  files: { path: string; content: string; mode: number }[]
  timeoutMs: number
}

export const DEFAULT_GIT_TIMEOUT_SECONDS = 300

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/
const SCP_LIKE = /^(?:([A-Za-z0-9._-]+)@)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(?!\/\/)([^\s]+)$/
const PATH_OK = /^[A-Za-z0-9._~\/%+@-]+$/

function refuse(message: string): InvalidGitSourceError {
  return new InvalidGitSourceError('source.git', message)
}

export function parseGitUrl(text: string): GitUrl {
  const form = 'give an https:// URL (https://github.com/owner/repo.git), or ssh://git@host/owner/repo.git or git@host:owner/repo.git with a deploy key'
  if (text.startsWith('-')) throw refuse(`A git URL may not start with "-"; ${form}.`)
  if (/[\s\0-\x1f\x7f]/.test(text)) throw refuse(`A git URL may not hold spaces or control characters; ${form}.`)
  if (/^[A-Za-z][A-Za-z0-9+.-]*::/.test(text)) throw refuse(`git's remote helpers (ext::, fd:: and the like) are not taken; ${form}.`)
  const scp = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? null : SCP_LIKE.exec(text)
  if (scp) {
    const host = scp[2].replace(/^\[|\]$/g, '').toLowerCase()
    if (!HOST_NAME.test(host) && !host.includes(':')) throw refuse(`${JSON.stringify(scp[2])} is not a host name; ${form}.`)
    if (scp[3].startsWith('-') || !PATH_OK.test(scp[3])) throw refuse(`The repository path ${JSON.stringify(scp[3])} is not one Berth fetches (letters, digits and ._~/%+@- only, not starting with "-").`)
    return { transport: 'ssh', url: text, host, port: 22 }
  }
  let u: URL
  try {
    u = new URL(text)
  } catch {
    throw refuse(`${JSON.stringify(text)} is not a URL; ${form}.`)
  }
  const transports: Record<string, GitTransport> = { 'https:': 'https', 'http:': 'http', 'ssh:': 'ssh' }
  const transport = transports[u.protocol] as GitTransport | undefined
  if (!transport) throw refuse(`Berth fetches git over https:// and ssh:// only (not ${u.protocol}//); ${form}.`)
  if (u.password) throw refuse('A git URL may not carry a password or token; store it as a secret of the site and name it in the source (the token is then sent apart, never in the URL).')
  if (u.search || u.hash) throw refuse('A git URL has no query or fragment; give the ref in source.ref.')
  if (transport !== 'ssh' && u.username) throw refuse('An https:// git URL carries no user name; a token is given apart.')
  if (u.username && !/^[A-Za-z0-9._][A-Za-z0-9._-]*$/.test(decodeURIComponent(u.username))) throw refuse(`The user name ${JSON.stringify(decodeURIComponent(u.username))} is not one Berth takes (letters, digits and ._-, not starting with "-").`)
  const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase()
  if (!HOST_NAME.test(host) && !/^[0-9.]+$/.test(host) && !host.includes(':')) throw refuse(`${JSON.stringify(u.hostname)} is not a host name; ${form}.`)
  if (u.pathname === '/') throw refuse(`The URL names no repository (its path is "/"); ${form}.`)
  if (u.pathname.split('/').some((p) => p === '..' || p.startsWith('-')) || !PATH_OK.test(u.pathname)) {
    throw refuse(`The repository path ${JSON.stringify(u.pathname)} is not one Berth fetches (letters, digits and ._~/%+@-, no "..", no part starting with "-").`)
  }
  const port = u.port ? Number(u.port) : { https: 443, http: 80, ssh: 22 }[transport]
  return { transport, url: u.href, host, port }
}

/** A branch, a tag or a full commit sha (40 or 64 hex); refused as git's check-ref-format would, and anything starting with "-". */
export function checkGitRef(ref: string): GitRef {
  const bad = (why: string) => new InvalidGitSourceError('source.ref', `The ref ${JSON.stringify(ref)} ${why}; give a branch (main), a tag (v1.2.0) or a full commit sha.`)
  if (ref === '') throw bad('is empty')
  if (ref.length > 255) throw bad('is longer than 255 characters')
  if (ref.startsWith('-')) throw bad('starts with "-"')
  if (/^([0-9a-f]{40}|[0-9a-f]{64})$/.test(ref)) return { ref, commit: true }
  if (/^[0-9a-f]{7,39}$/.test(ref)) throw bad('looks like a short commit sha, which a shallow fetch cannot name')
  if (/[\s\0-\x1f\x7f~^:?*[\\]/.test(ref) || ref.includes('..') || ref.includes('@{') || ref === '@') throw bad('holds a character or sequence a ref may not (space, ~ ^ : ? * [ \\, "..", "@{")')
  if (ref.startsWith('/') || ref.endsWith('/') || ref.includes('//') || ref.endsWith('.') || ref.endsWith('.lock') || ref.split('/').some((p) => p.startsWith('.'))) throw bad('is not a well-formed ref name')
  return { ref, commit: false }
}

/**
 * The fetch script, run by `sh -c` with the folder, URL and ref as its positional arguments
 * ($1 $2 $3), never spliced into its text.
 */
const SCRIPT = [
  'set -eu',
  'git init -q "$1"',
  'cd "$1"',
  'git fetch --depth 1 --no-tags --no-recurse-submodules --end-of-options "$2" "$3"',
  'git -c advice.detachedHead=false checkout -q --detach FETCH_HEAD',
  'commit=$(git rev-parse HEAD)',
  'rm -rf .git',
  'if [ -e .gitmodules ]; then sub=yes; else sub=no; fi',
  'echo "berth-git: commit $commit submodules $sub"',
].join('\n')

/**
 * The URL's transport against its checked address and the credentials given (only whether each
 * is there): checked by the deploy route before anything is queued, and again by the fetch.
 */
export function checkGitTransport(url: GitUrl, pinned: Pick<GitFetchInput['pinned'], 'address' | 'listed'>, credentials: { token: boolean; deployKey: boolean }): void {
  if (url.transport === 'http' && !pinned.listed) {
    throw refuse(`Berth fetches git over http:// only from a network the hoster lists in outbound.allow_networks; ${url.host} (${pinned.address}) is not in one: use https://.`)
  }
  if (credentials.token && url.transport === 'http') throw refuse('A token is never sent over http://: use an https:// URL for a private repository.')
  if (credentials.token && url.transport === 'ssh') throw refuse('A token goes with an https:// URL; an ssh URL takes a deploy key.')
  if (credentials.deployKey && url.transport !== 'ssh') throw refuse('A deploy key goes with an ssh:// or git@host:path URL; an https:// URL takes a token.')
}

export function gitFetchCommand(input: GitFetchInput): GitFetch {
  const { url, ref, pinned, credentials = {} } = input
  if (!input.dir.startsWith('/') || !input.scratch.startsWith('/')) throw new Error('the fetch folder and its scratch folder are absolute paths')
  checkGitTransport(url, pinned, { token: Boolean(credentials.token), deployKey: credentials.deployKey !== undefined })
  const config: [string, string][] = [
    ['protocol.allow', 'never'],
    [`protocol.${url.transport}.allow`, 'always'],
    ['http.followRedirects', 'false'],
    ['credential.helper', ''],
    ['core.hooksPath', '/dev/null'],
    ['submodule.recurse', 'false'],
    ['fetch.recurseSubmodules', 'false'],
    ['init.defaultBranch', 'main'],
  ]
  const env: Record<string, string> = {
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
    GIT_PROTOCOL_FROM_USER: '0',
  }
  const files: GitFetch['files'] = []
  if (url.transport !== 'ssh') {
    const address = pinned.family === 6 ? `[${pinned.address}]` : pinned.address
    config.push(['http.curloptResolve', `${url.host}:${url.port}:${address}`])
  }
  if (credentials.token) {
    const basic = Buffer.from(`${credentials.token.user ?? 'x-access-token'}:${credentials.token.value}`).toString('base64')
    config.push(['http.extraHeader', `Authorization: Basic ${basic}`])
  }
  if (input.caBundle) {
    files.push({ path: `${input.scratch}/ca.pem`, content: input.caBundle, mode: 0o600 })
    env.GIT_SSL_CAINFO = `${input.scratch}/ca.pem`
  }
  if (url.transport === 'ssh') {
    const ssh = ['ssh', '-F', '/dev/null', '-o', 'BatchMode=yes', '-o', `HostName=${pinned.address}`, '-o', 'ProxyCommand=none', '-o', 'ProxyJump=none',
      '-o', 'StrictHostKeyChecking=accept-new', '-o', `UserKnownHostsFile=${input.scratch}/known_hosts`, '-o', 'ConnectTimeout=20']
    if (credentials.deployKey) {
      files.push({ path: `${input.scratch}/deploy_key`, content: credentials.deployKey.endsWith('\n') ? credentials.deployKey : `${credentials.deployKey}\n`, mode: 0o600 })
      ssh.push('-o', 'IdentitiesOnly=yes', '-i', `${input.scratch}/deploy_key`)
    }
    env.GIT_SSH_COMMAND = ssh.join(' ')
    env.GIT_SSH_VARIANT = 'ssh'
  }
  env.GIT_CONFIG_COUNT = String(config.length)
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key
    env[`GIT_CONFIG_VALUE_${i}`] = value
  })
  const seconds = input.timeoutSeconds ?? DEFAULT_GIT_TIMEOUT_SECONDS
  return {
    argv: ['timeout', '-k', '5', String(seconds), 'sh', '-c', SCRIPT, 'berth-git-fetch', input.dir, url.url, ref.ref],
    env,
    files,
    timeoutMs: (seconds + 10) * 1000,
  }
}

export interface GitFetchResult {
  commit: string
  /** The tree has a `.gitmodules`: the pipeline fails the deployment (submodules are never fetched). */
  submodules: boolean
}

/** The fetch's answer from its output and exit code: the commit, or why it failed in words an agent can act on. */
export function readGitFetch(exitCode: number, output: string, timeoutSeconds = DEFAULT_GIT_TIMEOUT_SECONDS): GitFetchResult | { error: string } {
  const last = /^berth-git: commit ([0-9a-f]{40,64}) submodules (yes|no)$/m.exec(output)
  if (exitCode === 0 && last) return { commit: last[1], submodules: last[2] === 'yes' }
  if (exitCode === 124 || exitCode === 137) return { error: `The git fetch did not finish within ${timeoutSeconds} s; fetch a smaller repository or ref.` }
  const tail = output.trim().split('\n').slice(-10).join('\n')
  return {
    error: `The git fetch failed (exit code ${exitCode}). Check the URL and the ref; a private repository needs a token (https) or a deploy key (ssh) in the source. git said:\n${tail}`,
  }
}

/** Words for a tree with a `.gitmodules`, for the failed deployment. */
export const SUBMODULES_REFUSED = 'The tree has a .gitmodules: Berth never fetches submodules (they would reach repositories nobody checked). Vendor the submodule\'s files into the repository, or deploy them as an archive.'
