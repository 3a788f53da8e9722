import { lstat } from 'node:fs/promises'
import { join } from 'node:path'

/** Whether `name` is in the folder `dir` (lstat: a symlink there counts, and is not followed). */
export const entryExists = (dir: string, name: string): Promise<boolean> => lstat(join(dir, name)).then(() => true, () => false)
