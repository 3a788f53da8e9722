/**
 * Why a file operation was refused. The files driver throws only this (or a bug); the files
 * service maps each problem to one HTTP status:
 *   bad_path    422 the path breaks a rule, goes through a symlink, or a segment is a file;
 *   not_found   404 nothing at the path;
 *   wrong_type  422 a directory where a file is needed (or the reverse), a FIFO, socket or device;
 *   too_large   413 the file is over the read limit;
 *   not_text    415 read as text, but not UTF-8 or holding NUL bytes;
 *   no_space    413 the disk is full;
 *   busy        409 the tenant changed the same place while we worked on it; retrying helps.
 * `message` is one sentence for the caller, with no host path in it and no route or tool: where
 * another operation helps, `next` says which, the message has no final period, and the files
 * service completes the sentence with the operation named as the caller's door names it.
 */
export type FileProblem = 'bad_path' | 'not_found' | 'wrong_type' | 'too_large' | 'not_text' | 'no_space' | 'busy'

/**
 * The operation that helps after a refusal: list the folder (`path` when known), read the file,
 * or delete what is in the way.
 */
export type FileNextStep = { op: 'list'; path?: string } | { op: 'read' } | { op: 'delete' }

export class FileError extends Error {
  constructor(
    readonly problem: FileProblem,
    message: string,
    readonly next: FileNextStep | null = null,
  ) {
    super(message)
  }
}
