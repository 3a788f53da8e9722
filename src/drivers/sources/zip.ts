import yauzl from 'yauzl'
import { InvalidSourceError, SourceTooLargeError, TooManyFilesError, UnsafeSourceError } from './errors'
import { type MemberReader, type SourceMembers, shown } from './tree-rules'

/**
 * A zip, read with yauzl (thejoshwolfe/yauzl, the reader most of npm's unzippers sit on): from
 * its central directory, as `unzip` reads it, with random access to the work file, so a member's
 * declared size is known before any of it is expanded (the sum past the disk refuses a zip bomb
 * at once) and yauzl checks each member's data against that size as it inflates (a member lying
 * about its size fails, after at most its declared size). Its ZIP64 and bounds checks are its
 * own, kept; names are taken as bytes (`decodeStrings: false`) and checked by our rules, so a
 * refusal names the member. A unix mode in the external attributes says folders, files, links
 * (whose target is the member's data), FIFOs, devices and sockets.
 */
const S_IFMT = 0o170000
const TYPES: Record<number, Parameters<SourceMembers['add']>[1]> = {
  0o040000: 'folder', 0o100000: 'file', 0o120000: 'symbolic link', 0o010000: 'fifo', 0o020000: 'device', 0o060000: 'device', 0o140000: 'socket',
}
/** The longest symbolic link target read (PATH_MAX). */
const MAX_LINK_BYTES = 4096

export async function zipReader(file: string): Promise<MemberReader> {
  let zip: yauzl.ZipFile
  try {
    zip = await yauzl.openPromise(file, { decodeStrings: false, validateEntrySizes: true, autoClose: false, strictFileNames: false })
  } catch (err) {
    throw invalid(err)
  }
  const files: yauzl.Entry[] = []
  return {
    async scan(members) {
      try {
        for await (const entry of zip.eachEntry()) {
          const name = (entry.fileName as unknown as Buffer).toString('latin1')
          if (entry.isEncrypted()) throw new InvalidSourceError(`member ${JSON.stringify(shown(name))} is encrypted`)
          if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) throw new InvalidSourceError(`member ${JSON.stringify(shown(name))} is compressed with method ${entry.compressionMethod}; only stored and deflated members are read`)
          const unix = entry.versionMadeBy >> 8 === 3 ? (entry.externalFileAttributes >>> 16) & 0xffff : 0
          const kind = name.endsWith('/') ? 'folder' : ((unix & S_IFMT) === 0 ? 'file' : TYPES[unix & S_IFMT]) ?? 'device'
          const mode = unix & 0o777 || (kind === 'folder' ? 0o755 : 0o644)
          let link = ''
          if (kind === 'symbolic link') {
            if (entry.uncompressedSize > MAX_LINK_BYTES) throw new UnsafeSourceError(shown(name), `member ${JSON.stringify(shown(name))} is a symbolic link whose target is longer than ${MAX_LINK_BYTES} bytes`)
            link = (await readAll(zip, entry)).toString('latin1')
          }
          members.add(name, kind, link, mode, kind === 'file' ? entry.uncompressedSize : 0)
          if (kind === 'file') files.push(entry)
        }
      } catch (err) {
        throw invalid(err)
      }
    },
    async copyFiles(onFile) {
      for (const entry of files) {
        let stream: NodeJS.ReadableStream
        try {
          stream = await zip.openReadStreamPromise(entry)
        } catch (err) {
          throw invalid(err)
        }
        await onFile(entry.uncompressedSize, guarded(stream as AsyncIterable<Buffer>))
      }
    },
    async close() {
      zip.close()
    },
  }
}

/** yauzl's errors as they come (a damaged zip, a size that lies) become InvalidSourceError; ours pass. */
function invalid(err: unknown): Error {
  if (err instanceof UnsafeSourceError || err instanceof InvalidSourceError || err instanceof SourceTooLargeError || err instanceof TooManyFilesError) return err
  return new InvalidSourceError(`it is not a zip, or it is damaged (${err instanceof Error ? err.message : String(err)})`)
}

async function* guarded(stream: AsyncIterable<Buffer>): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of stream) yield chunk
  } catch (err) {
    throw invalid(err)
  }
}

async function readAll(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Buffer> {
  const parts: Buffer[] = []
  for await (const chunk of (await zip.openReadStreamPromise(entry)) as AsyncIterable<Buffer>) parts.push(chunk)
  return Buffer.concat(parts)
}
