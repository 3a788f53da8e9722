/**
 * The page a new site shows until its owner replaces it. Both images carry it in
 * /home/site/public; Docker copies the image's /home/site into a site's volume the first time
 * the (empty) volume is mounted, so every new site starts with it, owned by the site user.
 */
export const DEFAULT_PAGE_TITLE = 'This site is live'

/** The default page; `extra` is HTML added under the first paragraph (the PHP version, say). */
export function defaultPage(extra = ''): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${DEFAULT_PAGE_TITLE}</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; padding: 0 1rem; color: #222; }
  code { background: #f2f2f2; padding: 0 .25em; border-radius: 3px; }
</style>
</head>
<body>
<h1>${DEFAULT_PAGE_TITLE}</h1>
<p>It is hosted on Berth and answers at this address. This is the default page every new site starts with.</p>
${extra}
<h2>Changing it</h2>
<p>The web root is <code>public/</code> in the site's home folder (<code>/home/site/public</code>).
Replace <code>public/index.html</code> with your own page, and add any other files beside it.</p>
<p>An agent that owns this site will do that through the hosting API's Files endpoints
(<code>/sites/{slug}/files/</code>), coming in a later release; until then the hoster can place files
in the site's volume.</p>
</body>
</html>
`
}

/** The PHP image's default index.php: the same page, proving PHP-FPM runs. */
export function defaultPhpPage(): string {
  return defaultPage('<p>PHP <?= htmlspecialchars(PHP_VERSION) ?> is running: this page is <code>public/index.php</code>.</p>')
    .replace('Replace <code>public/index.html</code> with your own page', 'Replace <code>public/index.php</code> (or add an <code>index.html</code>, which takes precedence) with your own page')
}
