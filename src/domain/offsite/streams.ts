/**
 * `source` behind a switch: once `signal` aborts, the stream errors with the signal's reason and
 * `source` is cancelled (its file closed), whoever holds the stream. For a copy cut short by a
 * failed put or by Berth stopping: the destination may stop reading without cancelling.
 */
export function abortable(source: ReadableStream<Uint8Array>, signal: AbortSignal): ReadableStream<Uint8Array> {
  const reader = source.getReader()
  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    reader.cancel(signal.reason).catch(() => {})
  }
  let onAbort = () => stop()
  return new ReadableStream<Uint8Array>({
    start(controller) {
      onAbort = () => {
        try {
          controller.error(signal.reason)
        } catch {
          // already closed or errored
        }
        stop()
      }
      if (signal.aborted) onAbort()
      else signal.addEventListener('abort', onAbort, { once: true })
    },
    async pull(controller) {
      const r = await reader.read()
      if (signal.aborted) return
      if (r.done) {
        signal.removeEventListener('abort', onAbort)
        controller.close()
      } else {
        controller.enqueue(r.value)
      }
    },
    cancel(reason) {
      signal.removeEventListener('abort', onAbort)
      stopped = true
      return reader.cancel(reason)
    },
  }, { highWaterMark: 0 })
}

/** The hex SHA-256 and size of everything `stream` holds, read through once. */
export async function digestOf(stream: ReadableStream<Uint8Array>): Promise<{ sha256: string; bytes: number }> {
  const hash = new Bun.CryptoHasher('sha256')
  let bytes = 0
  const reader = stream.getReader()
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    hash.update(r.value)
    bytes += r.value.byteLength
  }
  return { sha256: hash.digest('hex'), bytes }
}
