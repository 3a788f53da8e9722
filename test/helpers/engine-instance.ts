import type Docker from 'dockerode'
import { memoryLogger } from '../../src/lib/logger'
import { DISKS_ROLE, firstHeld, HELPER_IMAGES, SiteDisks } from '../../src/drivers/runtime/site-disks'

/**
 * Removes everything a Berth instance made on one engine: its site containers and networks, its
 * volumes with their disks (unmounted and their images removed through the instance's disks
 * helper, as Berth's own removal does: a volume whose disk is mounted cannot be removed), then
 * the helper. What every test that ran sites on an engine calls at its end.
 */
export async function removeEngineInstance(docker: Docker, instance: string): Promise<void> {
  const filters = { label: [`dev.berth.instance=${instance}`] }
  const containers = await docker.listContainers({ all: true, filters })
  const isHelper = (c: Docker.ContainerInfo) => c.Labels[DISKS_ROLE] === 'disks'
  await Promise.all(containers.filter((c) => !isHelper(c)).map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => {})))
  await Promise.all((await docker.listNetworks({ filters })).map((n) => docker.getNetwork(n.Id).remove().catch(() => {})))
  const volumes = (await docker.listVolumes({ filters })).Volumes ?? []
  if (volumes.length > 0) {
    const disks = new SiteDisks({ instanceId: instance, log: memoryLogger(), imageOn: () => firstHeld(docker, HELPER_IMAGES) })
    const engine = { nodeId: 'control', node: null, docker, bulk: docker, address: '', key: 'cleanup' }
    for (const v of volumes) await disks.removeVolume(engine, v.Name).catch(() => docker.getVolume(v.Name).remove().catch(() => {}))
  }
  for (const c of await docker.listContainers({ all: true, filters })) await docker.getContainer(c.Id).remove({ force: true }).catch(() => {})
}
