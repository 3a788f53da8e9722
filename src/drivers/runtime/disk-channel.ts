import type Docker from 'dockerode'
import { createHash, randomBytes } from 'node:crypto'
import { PassThrough, type Duplex } from 'node:stream'
import { DISK_SCRIPT } from './disk-script'

/**
 * The disks helper's main process: a loop that answers DISK_SCRIPT's verbs read from its stdin,
 * one request a line (`ID VERB FOLDER LIMIT .`), each run at once in the background in the
 * engine's mount namespace (the namespace of its parent, the container's shim: as ENTER_ENGINE
 * does for an exec), answered on stdout as one line `ID EXIT BASE64(OUTPUT)`. Several run at
 * once; an answer is one write of under 1 KiB (the output is cut to 600 bytes: the verbs answer
 * a word or two, an error a line), so answers written together never mix (a pipe's writes under
 * PIPE_BUF are whole). A line without the closing `.` (a request cut off by a Berth that died
 * while writing it) is ignored. `ID ping . . .` is answered by the loop itself. Its stdin stays
 * open across attachments (OpenStdin, not StdinOnce); should it end, the loop exits and the
 * restart policy brings the helper back.
 */
export const HELPER_LOOP = String.raw`
script=$1
for _ in $(seq 1 200); do
  p=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$$/status)
  comm=$(cat /proc/$p/comm 2>/dev/null || true)
  case "$comm" in containerd-shim*) break ;; esac
  sleep 0.01
done
if command -v nsenter >/dev/null 2>&1; then ns=nsenter; else ns="busybox nsenter"; fi
while IFS=' ' read -r id verb folder limit end; do
  [ "$end" = . ] || continue
  if [ "$verb" = ping ]; then echo "$id 0 "; continue; fi
  # Forked twice: the verb's process is the shim's (a subreaper's) child, which reaps it.
  ( (
    out=$($ns -t "$p" -m -- /bin/sh -c "$script" disk "$verb" "$folder" "$limit" 2>&1 </dev/null)
    code=$?
    line="$id $code $(printf '%s' "$out" | head -c 600 | base64 | tr -d '\n')"
    echo "$line"
  ) </dev/null & )
done
`

/** The helper's definition, as a label: a helper made by another Berth version (another loop or script) is made again. */
export const HELPER_VERSION = createHash('sha256').update(HELPER_LOOP).update(DISK_SCRIPT).digest('hex').slice(0, 16)

/** The channel ended (the helper stopped, the stream closed) before the answer: the caller runs the verb another way. */
export class ChannelBroken extends Error {}

interface Pending { resolve(v: { code: number; out: string }): void; reject(e: Error): void }

/**
 * One attachment to a disks helper's stdin and stdout (the engine's attach API: the same for
 * this box's engine and a node's), kept open, its requests multiplexed by id.
 */
export class DiskChannel {
  private pending = new Map<string, Pending>()
  private next = 0
  private buffer = ''
  private broken = false
  /** Ids begin with this attachment's own prefix: another attachment's answers are not ours. */
  private readonly prefix = randomBytes(4).toString('hex')

  private constructor(readonly helperId: string, private stream: Duplex) {}

  /** Attaches to the helper and checks its loop answers (a ping), within `timeoutMs`. */
  static async open(docker: Docker, helperId: string, timeoutMs = 5000): Promise<DiskChannel> {
    const stream = (await docker.getContainer(helperId).attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as unknown as Duplex
    // A stream left open must not keep a process that is done (a CLI command) from exiting.
    ;(stream as { unref?: () => void }).unref?.()
    const channel = new DiskChannel(helperId, stream)
    const out = new PassThrough()
    out.on('data', (chunk: Buffer) => channel.received(chunk.toString('utf8')))
    docker.modem.demuxStream(stream, out, new PassThrough())
    const end = () => channel.fail()
    stream.on('end', end)
    stream.on('close', end)
    stream.on('error', end)
    // A request a Berth that died left half-written ends here, without its closing `.`.
    stream.write('\n')
    let timer: ReturnType<typeof setTimeout> | undefined
    try {
      await Promise.race([
        channel.send('ping', '.', 0),
        new Promise((_, reject) => { timer = setTimeout(() => reject(new ChannelBroken('the disks helper did not answer its ping')), timeoutMs) }),
      ])
    } catch (err) {
      channel.close()
      throw err
    } finally {
      clearTimeout(timer)
    }
    return channel
  }

  get open(): boolean {
    return !this.broken
  }

  /** Runs a verb; rejects with ChannelBroken when the channel ends first. */
  call(verb: string, folder: string, limit: number): Promise<{ code: number; out: string }> {
    return this.send(verb, folder, Math.round(limit))
  }

  close(): void {
    this.fail()
    this.stream.destroy()
  }

  private send(verb: string, folder: string, limit: number): Promise<{ code: number; out: string }> {
    if (this.broken) return Promise.reject(new ChannelBroken('the disks channel is closed'))
    if (/\s/.test(folder) || /\s/.test(verb)) return Promise.reject(new Error(`A disks request takes no spaces: ${verb} ${folder}`))
    const id = `${this.prefix}-${++this.next}`
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.stream.write(`${id} ${verb} ${folder} ${limit} .\n`)
    })
  }

  private received(text: string): void {
    this.buffer += text
    let nl: number
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl)
      this.buffer = this.buffer.slice(nl + 1)
      const m = /^(\S+) (\d+) ([A-Za-z0-9+/=]*)$/.exec(line)
      const waiting = m && this.pending.get(m[1]!)
      if (!m || !waiting) continue
      this.pending.delete(m[1]!)
      waiting.resolve({ code: Number(m[2]), out: Buffer.from(m[3]!, 'base64').toString('utf8') })
    }
  }

  private fail(): void {
    if (this.broken) return
    this.broken = true
    for (const p of this.pending.values()) p.reject(new ChannelBroken('the disks channel ended before the answer'))
    this.pending.clear()
  }
}
