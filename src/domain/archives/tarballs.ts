/**
 * What the archive jobs have done to files on the host, as the domain needs it. The driver is
 * drivers/archives/home-tar.ts (GNU tar and zstd) with drivers/archives/work-folder.ts; the jobs
 * decide when (the site frozen or not) and in what order, the driver how.
 */
export interface HomeTarballs {
  /**
   * Writes the home as an uncompressed tar to `outFile`, without `logs/` nor the names in `keep`
   * (at the root). Meant to run while the site is frozen.
   */
  tarHome(home: string, outFile: string, keep?: readonly string[]): Promise<void>
  /**
   * Replaces the files of the home with those of `tarFile`, keeping its `logs/` and the names in
   * `keep` (at the root) while they are real folders. The site must not
   * run meanwhile. Safe to run again after a crash part-way: it resumes and never loses the
   * previous files before the new ones are in. Never writes outside the home: an archive with a
   * member outside `./`, under a kept name, beneath one of its links, a device, or a hard link to
   * anything but an earlier member is refused first (UnsafeArchiveError of
   * drivers/archives/types.ts, saying which and why), and the home is left as it was.
   */
  replaceHome(home: string, tarFile: string, keep?: readonly string[]): Promise<void>
  /** The regular files (and hard links) an uncompressed tar holds, and their bytes. */
  scanTar(file: string): Promise<{ files: number; bytes: number }>
  compressFile(from: string, to: string): Promise<void>
  decompressFile(from: string, to: string): Promise<void>
}

/**
 * The local folder where the jobs keep tarballs on their way to and from the archive store, each
 * named by its archive id (`{archive_id}.tar`), so that a job run again reuses its own names.
 */
export interface WorkFolder {
  /** The path of the work file `name`, for the calls above. */
  path(name: string): string
  /** Creates the folder, private to Berth's user (0700), if it is missing. */
  prepare(): Promise<void>
  /** The names of the files in it; none when the folder does not exist. */
  list(): Promise<string[]>
  /** Removes the named files; a missing one is no error. */
  remove(...names: string[]): Promise<void>
  /** The size of the work file `name` in bytes (what its extraction writes, for a tarball). */
  size(name: string): Promise<number>
}

/**
 * The databases' dumps an archive holds, under `.berth-databases/` at the root of its tarball
 * (drivers/archives/db-dumps.ts): written into a folder of the work folder, appended to the
 * home's tar, and taken out of it again before the home's files are put back.
 */
export interface DumpFiles {
  /** Makes the folder `dir` empty, ready for dumps. */
  freshDumps(dir: string): Promise<string>
  dumpWriter(dir: string, file: string): NodeJS.WritableStream
  /** Refuses anything but a regular file. */
  dumpReader(dir: string, file: string): Promise<NodeJS.ReadableStream>
  writeManifest(dir: string, manifest: unknown): Promise<void>
  /** Null when the folder holds no manifest. */
  readManifest(dir: string): Promise<unknown | null>
  appendDumps(tarFile: string, dir: string): Promise<void>
  /** Moves the dumps of `tarFile` into `dir` (false: it has none), leaving the home's files alone in the tar. */
  takeDumps(tarFile: string, dir: string): Promise<boolean>
  clearDumps(dir: string): Promise<void>
}
