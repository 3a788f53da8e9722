import type { AuditEventRow } from '../../store/schema'

/**
 * One audit record as one line of `GET /sites/{slug}/logs/?type=audit` (docs/api.md, Logs):
 * readable, and parseable by splitting on spaces up to `cmd`:
 *
 *     2026-11-26T01:02:03.456Z exec key=svc_ab12cd34 exit=3 duration_ms=12 cmd: sh -c 'id -u'
 *     2026-11-26T01:05:00.000Z console key=svc_ab12cd34 exit=none duration_ms=900000 reason="idle 15 min"
 *     2026-11-26T01:07:00.000Z shell admin=alice as=root exit=0 duration_ms=5210
 *     2026-11-26T01:09:00.000Z exec key=svc_ab12cd34 open cmd: composer install
 *
 * The start (UTC, ISO 8601), the kind (exec, console, shell, database), who (`key=` the API key's prefix,
 * or `admin=` the Unix user on the box), `as=root` when it ran as root, then how it ended:
 * `exit=` the exit code (`none` when there was none) with `duration_ms=` and, when it did not end
 * by itself, `reason=` (a JSON string); or `open`, when no end is recorded: it still runs, or what
 * ran it died first (a crash, kill -9), then `open reason="berth stopped before it ended"` once
 * `berth serve` started again knows its exec or console session is gone. Last, for a command (not an interactive session),
 * `cmd: ` and the command line to the end of the line; `cmd[first 4096 of 10240 bytes]: ` when
 * only its beginning was kept. Control characters in the command are written `\n`, `\r`, `\t`
 * or `\xHH`, and a backslash `\\`, so a record is always one line.
 */
export function auditLine(row: AuditEventRow): string {
  const parts = [new Date(row.startedAt).toISOString(), row.kind, actorOf(row)]
  if (row.runAs === 'root') parts.push('as=root')
  if (row.endedAt === null) parts.push('open')
  else parts.push(`exit=${row.exitCode ?? 'none'}`, `duration_ms=${Math.max(0, row.endedAt - row.startedAt)}`)
  if (row.reason) parts.push(`reason=${JSON.stringify(row.reason)}`)
  if (row.command !== null) {
    const cut = row.commandBytes === null ? '' : `[first ${Buffer.byteLength(row.command)} of ${row.commandBytes} bytes]`
    parts.push(`cmd${cut}: ${escapeControls(row.command)}`)
  }
  return parts.join(' ')
}

function actorOf(row: AuditEventRow): string {
  return row.actor === 'key' ? `key=${token(row.keyPrefix ?? '')}` : `admin=${token(row.adminUser ?? '')}`
}

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\\': '\\\\' }

/** Backslash and the C0 and C1 control characters as escapes, the rest as it is. */
export function escapeControls(text: string): string {
  return text.replace(/[\x00-\x1f\x7f-\x9f\\]/g, (c) => NAMED[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
}

/** A value that must stay one space-free token (a user name from the environment). */
function token(text: string): string {
  return escapeControls(text).replaceAll(' ', '\\x20') || '?'
}
