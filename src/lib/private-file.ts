import { renameSync, writeFileSync } from 'node:fs'

/**
 * Writes `content` to `file` readable by Berth's user only (0600), whole or not at all: a temporary
 * file renamed over the old one, so a crash never leaves half a key or half a state file.
 */
export function writePrivateFile(file: string, content: string): void {
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, content, { mode: 0o600 })
  renameSync(temporary, file)
}
