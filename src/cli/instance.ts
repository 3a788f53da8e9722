import { existsSync } from 'node:fs'
import { databasePath } from '../compose'
import { readInstanceId } from '../store/settings'
import { openStore } from '../store/store'
import { COMMON_OPTIONS, STORE_OPTIONS, type Command } from './command'
import { configFrom } from './config-flags'

export const instanceCommand: Command = {
  path: ['instance'],
  summary: "Print this installation's id: the dev.berth.instance label on its containers, networks and volumes.",
  usage: 'berth instance [--data-dir DIR] [--config FILE] [--json]',
  description: [
    'Berth names and labels what it makes on the Docker engine with a random id of this installation',
    '(berth-<id>-<slug>, dev.berth.instance=<id>), made on the first start and kept in the database, so',
    "that installations sharing an engine never touch each other's sites. Select this one's with",
    '--filter label=dev.berth.instance=<id>; dev.berth.managed=true matches every installation\'s.',
  ].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth instance', 'docker ps -a --filter label=dev.berth.instance=$(sudo berth instance)'],
  run(ctx) {
    const path = databasePath(configFrom(ctx))
    const id = existsSync(path) ? readFrom(path) : null
    if (!id) {
      ctx.out.error(`${path} holds no instance id yet: berth serve makes one on its first start.`)
      return 1
    }
    ctx.out.result({ instance_id: id, label: `dev.berth.instance=${id}`, database: path }, () => id)
    return 0
  },
}

function readFrom(path: string): string | null {
  const store = openStore(path)
  try {
    return readInstanceId(store)
  } catch {
    // A database never migrated has no settings table: no instance either.
    return null
  } finally {
    store.close()
  }
}
