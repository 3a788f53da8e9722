import type { Terminal } from '../drivers/runtime/types'

/** What `attachTerminal` plumbs: this process's standard streams (tests may pass others). */
export interface LocalTerminal {
  stdin: NodeJS.ReadStream
  stdout: NodeJS.WriteStream
  /** Signals the process hears (`process`). */
  signals: Pick<NodeJS.Process, 'on' | 'off'>
}

/** The size to start a terminal at: the local terminal's, or 80x24 when stdout is not one. */
export function localSize(stdout: NodeJS.WriteStream): { cols: number; rows: number } {
  return stdout.isTTY && stdout.columns > 0 ? { cols: stdout.columns, rows: stdout.rows } : { cols: 80, rows: 24 }
}

/**
 * Joins a remote terminal to the local one, as `ssh -t` does: raw mode on a local TTY (every
 * key, Ctrl-C included, goes to the remote side, which echoes), the window's size followed
 * (SIGWINCH), the output written as it comes. Returns the function that undoes it all (cooked
 * mode back), to call once the remote side ended.
 */
export function attachTerminal(remote: Terminal, local: LocalTerminal): () => void {
  const { stdin, stdout, signals } = local
  remote.onData((bytes) => stdout.write(bytes))
  const raw = stdin.isTTY === true
  if (raw) stdin.setRawMode(true)
  let undone = false
  // Input the container does not take as fast as it comes waits in stdin, not in memory: a
  // pasted file or a pipe pauses until the engine's stream drained.
  const onInput = (chunk: Buffer | string) => {
    if (!remote.write(typeof chunk === 'string' ? chunk : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))) stdin.pause()
  }
  remote.onWritable(() => {
    if (!undone) stdin.resume()
  })
  stdin.on('data', onInput)
  stdin.resume()
  const onResize = () => {
    const { cols, rows } = localSize(stdout)
    void remote.resize(cols, rows).catch(() => {})
  }
  if (stdout.isTTY) signals.on('SIGWINCH', onResize)
  return () => {
    if (undone) return
    undone = true
    signals.off('SIGWINCH', onResize)
    stdin.off('data', onInput)
    if (raw) stdin.setRawMode(false)
    stdin.pause()
  }
}
