import { Elysia } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { ExecBody, ExecResult } from './model'
import type { ExecService } from '../../domain/exec'

/**
 * The exec API (docs/api.md, "Exec"): one command in the site's container, as the site user,
 * answered once it ends. Scope write; a site-scoped key may use it on its own site. Its body may
 * exceed `server.max_body_bytes` (stdin up to 1 MiB): domain/exec/limits.ts, EXEC_BODY_LIMIT.
 */
export const execRoutes = (plugins: ApiPlugins, exec: ExecService) =>
  new Elysia({ name: 'exec-routes' })
    .use(plugins)
    .post('/sites/:tenant_slug/exec/', ({ site, principal, body }) => exec.run(site, { kind: 'key', keyId: principal.keyId, keyPrefix: principal.keyPrefix }, body), {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: ExecBody,
      response: ok(ExecResult),
      errors: [429],
      detail: {
        tags: ['Exec'],
        summary: "Run a command in the site's container as the site user (never root) and answer its exit code and output",
        description:
          'The command runs in the site\'s home (or cwd) with the site\'s environment and env added, and is answered once it ends: exit_code, stdout and stderr ' +
          '(each its last 1 MiB; truncated says when a stream lost its beginning), duration_ms and timed_out. At timeout_seconds it is killed with its whole ' +
          'process group (exit_code 137). What it starts in the background and leaves running keeps running after it ends. Its processes count against the ' +
          "plan's CPU and memory like the site's own. At most 2 run at once per site: a third is refused with 429 and Retry-After. Every exec is recorded in the " +
          "site's audit trail (logs, type audit).",
        operationId: 'execCommand',
      },
    })
