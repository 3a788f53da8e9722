import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, isAbsolute, join, resolve } from 'node:path'

/**
 * WordPress as Debian ships it (issue 40's drill): the `wordpress` package and the packages its
 * tree links into (Debian replaces bundled copies with symlinks to php-getid3, libjs-underscore
 * and libjs-cropper), plus a classic theme (wordpress-theme-twentytwentyone; the package holds
 * none). Downloaded once with `apt-get download` into .cache/debs/ (scripts/setup.sh does it
 * before the suite; a test run alone does it here), unpacked with dpkg-deb.
 */
export const WORDPRESS_DEBS = ['wordpress', 'wordpress-theme-twentytwentyone', 'php-getid3', 'libjs-underscore', 'libjs-cropper']
export const DEB_CACHE = resolve(import.meta.dirname, '..', '..', '.cache', 'debs')

function debs(): string[] {
  mkdirSync(DEB_CACHE, { recursive: true })
  const have = () => readdirSync(DEB_CACHE).filter((f) => f.endsWith('.deb'))
  const missing = WORDPRESS_DEBS.filter((p) => !have().some((f) => f.startsWith(`${p}_`)))
  if (missing.length > 0) execFileSync('apt-get', ['download', ...missing], { cwd: DEB_CACHE, stdio: 'pipe' })
  return WORDPRESS_DEBS.map((p) => join(DEB_CACHE, have().find((f) => f.startsWith(`${p}_`))!))
}

/** Replaces each symlink under `dir` by the file it names inside `root` (as installed), or drops it. */
function resolveLinks(root: string, dir: string): void {
  for (const name of readdirSync(dir)) {
    const at = join(dir, name)
    const st = lstatSync(at)
    if (st.isDirectory()) resolveLinks(root, at)
    else if (st.isSymbolicLink()) {
      let target = at
      for (let hops = 0; hops < 8; hops++) {
        const t = lstatSync(target, { throwIfNoEntry: false })
        if (!t?.isSymbolicLink()) break
        const link = readlinkSync(target)
        target = isAbsolute(link) ? join(root, link) : resolve(dirname(target), link)
      }
      unlinkSync(at)
      // A link out of the packages (the host's CA bundle, Apache's .htaccess) is left out.
      if (lstatSync(target, { throwIfNoEntry: false })?.isFile()) copyFileSync(target, at)
    }
  }
}

/**
 * wp-config.php: the database from the variable Berth gives the site for it (`{NAME}_URL`,
 * `mysql://site:PW@db-main:3306/main`), no outside requests (the drill needs none), no cron
 * requests to itself.
 */
export function wpConfig(variable: string): string {
  return `<?php
$db = parse_url(getenv('${variable}') ?: '');
if (empty($db['host'])) { http_response_code(500); exit('${variable} is not in PHP\\'s environment'); }
define('DB_NAME', ltrim($db['path'], '/'));
define('DB_USER', urldecode($db['user']));
define('DB_PASSWORD', urldecode($db['pass']));
define('DB_HOST', $db['host'] . ':' . $db['port']);
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
${['AUTH_KEY', 'SECURE_AUTH_KEY', 'LOGGED_IN_KEY', 'NONCE_KEY', 'AUTH_SALT', 'SECURE_AUTH_SALT', 'LOGGED_IN_SALT', 'NONCE_SALT'].map((k) => `define('${k}', '${k.toLowerCase()}-${Math.random().toString(36).slice(2)}');`).join('\n')}
define('WP_DEFAULT_THEME', 'twentytwentyone');
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
$table_prefix = 'wp_';
if (!defined('ABSPATH')) define('ABSPATH', __DIR__ . '/');
require_once ABSPATH . 'wp-settings.php';
`
}

/** The tree to deploy as a tar.gz: Debian's /usr/share/wordpress with its links resolved and our wp-config.php. */
export function wordpressTarGz(variable: string): { bytes: Uint8Array; files: number; version: string } {
  const root = mkdtempSync(join(tmpdir(), 'berth-wordpress-'))
  try {
    for (const deb of debs()) execFileSync('dpkg-deb', ['-x', deb, root])
    const tree = join(root, 'usr', 'share', 'wordpress')
    resolveLinks(root, tree)
    writeFileSync(join(tree, 'wp-config.php'), wpConfig(variable))
    const version = /\$wp_version = '([^']+)'/.exec(readFileSync(join(tree, 'wp-includes', 'version.php'), 'utf8'))![1]!
    const files = Number(execFileSync('sh', ['-c', `find '${tree}' -type f | wc -l`]).toString().trim())
    const bytes = new Uint8Array(execFileSync('tar', ['-czf', '-', '-C', tree, '.'], { maxBuffer: 512 * 1024 * 1024 }))
    return { bytes, files, version }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}
