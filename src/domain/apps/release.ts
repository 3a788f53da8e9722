import type { BuildPlan, TreeFacts } from './detect'

/**
 * Where an app site's releases live in its home (docs/architecture.md "Apps"), and the shell
 * each step runs in the site's container as the site user: the container sees only its own
 * files, so nothing here can reach the host's, and what it writes counts against the site's disk.
 */
export const HOME = '/home/site'
export const APP_DIR = `${HOME}/app`
export const RELEASES_DIR = `${APP_DIR}/releases`
export const INCOMING_DIR = `${APP_DIR}/incoming`
/** Releases kept per site (the live one and the newest before it): what a rollback can switch to. */
export const KEPT_RELEASES = 5

export const releaseDir = (deploymentId: string) => `${RELEASES_DIR}/${deploymentId}`

/** Single-quoted for sh. */
export const sq = (s: string) => `'${s.replaceAll("'", `'"'"'`)}'`

/** An empty folder for a release (a leftover of a deployment cut short is removed first). */
export const prepareScript = (dir: string) => `set -e; rm -rf ${sq(dir)}; mkdir -p ${sq(dir)}`

/** Extracts the checked tar on stdin into the release (the checks ran on the host: drivers/sources/archive.ts). */
export const extractArgv = (dir: string) => ['tar', '-x', '--no-same-owner', '-f', '-', '-C', dir]

/** Moves a pushed tree (git archive by the pre-receive hook) into the release. */
export const adoptScript = (from: string, dir: string) => `set -e; rm -rf ${sq(dir)}; mkdir -p ${sq(RELEASES_DIR)}; mv ${sq(from)} ${sq(dir)}`

/**
 * Prints each symbolic link of the release that leads out of it, `path -> target` (at most 10):
 * a fetched or pushed tree is refused for them as an archive is (drivers/sources/tree-rules.ts),
 * before Berth writes anything into the release (.berth/release.json) or serves a folder of it.
 */
export const linksOutScript = (dir: string) => [
  `cd ${sq(dir)} || exit 3`,
  `find . -type l -print | while IFS= read -r l; do t=$(realpath -m -- "$l"); case "$t" in ${sq(dir)}|${sq(dir)}/*) ;; *) printf '%s -> %s\\n' "\${l#./}" "$(readlink -- "$l")" ;; esac; done | head -n 10`,
].join('\n')

const FACT_FILES = ['berth.json', 'Procfile', 'package.json', 'requirements.txt'] as const
const FACTS_LIMIT = 65536

/**
 * Prints what detection reads of the release's root: `@entry NAME` per entry (folders end in
 * /), `@public index|php`, and `@file NAME BASE64` for each of FACT_FILES that is a regular file.
 */
export function factsScript(dir: string): string {
  return [
    `cd ${sq(dir)} || exit 3`,
    `for e in * .[!.]* ..?*; do if [ -L "$e" ]; then printf '@entry %s\\n' "$e"; elif [ -d "$e" ]; then printf '@entry %s/\\n' "$e"; elif [ -e "$e" ]; then printf '@entry %s\\n' "$e"; fi; done`,
    `[ -f public/index.html ] && echo '@public index'`,
    `ls public/*.php >/dev/null 2>&1 && echo '@public php'`,
    `for f in ${FACT_FILES.join(' ')}; do if [ -f "$f" ] && [ ! -L "$f" ]; then printf '@file %s ' "$f"; head -c ${FACTS_LIMIT} "$f" | base64 -w0; echo; fi; done`,
    'exit 0',
  ].join('\n')
}

export function parseFacts(out: string): TreeFacts {
  const facts: TreeFacts = { entries: [], files: {}, publicHas: { index: false, php: false } }
  for (const line of out.split('\n')) {
    if (line.startsWith('@entry ')) facts.entries.push(line.slice(7))
    else if (line === '@public index') facts.publicHas.index = true
    else if (line === '@public php') facts.publicHas.php = true
    else if (line.startsWith('@file ')) {
      const [, name, b64 = ''] = line.split(' ')
      if ((FACT_FILES as readonly string[]).includes(name)) facts.files[name as (typeof FACT_FILES)[number]] = Buffer.from(b64, 'base64').toString('utf8')
    }
  }
  return facts
}

/**
 * Links each persistent folder of the release to the home's folder of the same name: the first
 * release to bring one seeds the home's (when that is empty); later releases' own copies are
 * dropped for the link. Also says whether a submodule was left out.
 */
export function persistentScript(dir: string, names: string[]): string {
  const lines = [`set -e`, `cd ${sq(dir)}`]
  for (const name of names) {
    const home = `${HOME}/${name}`
    lines.push(
      `mkdir -p ${sq(home)}`,
      `if [ -d ${sq(name)} ] && [ ! -L ${sq(name)} ] && [ -z "$(ls -A ${sq(home)})" ]; then cp -a ${sq(name)}/. ${sq(home)}/; echo "==> ~/${name} seeded from the tree"; fi`,
      `rm -rf ${sq(name)}`,
      `ln -s ${sq(home)} ${sq(name)}`,
    )
  }
  return lines.join('\n')
}

/** Prints the first of STATIC_OUTPUTS that exists after the build (a static tree with a build step). */
export const staticOutputScript = (dir: string, candidates: readonly string[]) =>
  `cd ${sq(dir)} || exit 3; for d in ${candidates.join(' ')}; do if [ -d "$d" ] && [ ! -L "$d" ]; then echo "$d"; exit 0; fi; done; exit 4`

/**
 * A process's command as the supervisor runs it (with sh -c, in the release): a Python release's
 * virtualenv first on PATH (so `python`, `gunicorn` are the release's), NODE_ENV=production for
 * node and bun unless the site's settings say otherwise; `exec`, so the supervisor's signals reach it.
 */
export function processCommand(runtime: BuildPlan['runtime'], cmd: string): string {
  // A list of commands (`a && b`, `a; b`) is run as it is: `exec` would end it at the first.
  const run = /[;&|\n]/.test(cmd) ? cmd : `exec ${cmd}`
  if (runtime === 'python') return `export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH"; ${run}`
  if (runtime === 'node' || runtime === 'bun') return `export NODE_ENV="\${NODE_ENV:-production}"; ${run}`
  return run
}

/** The release's manifest, which the supervisor reads (berth-supervise switch). */
export function releaseJson(id: string, plan: BuildPlan, staticRoot: string | null): string {
  return JSON.stringify({
    id,
    runtime: plan.runtime,
    processes: Object.fromEntries(Object.entries(plan.processes).map(([name, cmd]) => [name, processCommand(plan.runtime, cmd)])),
    static_root: staticRoot,
    health_path: plan.healthPath,
    stop_grace_seconds: plan.stopGraceSeconds,
  }, null, 2)
}

export const writeManifestScript = (dir: string) => `set -e; mkdir -p ${sq(`${dir}/.berth`)}; cat > ${sq(`${dir}/.berth/release.json`)}`

/** Removes every release folder but `keep`, and the incoming trees older than a day. */
export function pruneScript(keep: string[]): string {
  const kept = keep.map((k) => ` ${k} `).join('')
  return [
    `cd ${sq(RELEASES_DIR)} 2>/dev/null || exit 0`,
    `for d in * .[!.]*; do [ -e "$d" ] || continue; case ${sq(kept)} in *" $d "*) ;; *) rm -rf -- "$d" ;; esac; done`,
    `[ -d ${sq(INCOMING_DIR)} ] && find ${sq(INCOMING_DIR)} -mindepth 1 -maxdepth 1 -mmin +1440 -exec rm -rf {} + ; exit 0`,
  ].join('\n')
}

/** Whether the release folder still exists (a rollback's check). */
export const existsScript = (dir: string) => `[ -f ${sq(`${dir}/.berth/release.json`)} ]`
