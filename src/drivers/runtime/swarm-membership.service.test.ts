import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPrivateEngines, type PrivateEngines } from '../../../test/helpers/private-dockerd'
import { ensureManager, joinSwarm, leaveSwarm, swarmInfo, TASK_HISTORY_LIMIT, workerJoinToken } from './swarm-membership'

/** Two private engines (never the shared one: it must not be in a Swarm), on 10.249.7.0/24. */
let lab: PrivateEngines
beforeAll(async () => {
  lab = await startPrivateEngines('berth-swarm-t', 2, 7)
}, 90_000)
afterAll(() => lab?.stop())

describe('swarm membership of an engine', () => {
  it('makes the first engine a manager once, and joins the second as a worker with its token', async () => {
    const [manager, worker] = lab.engines as [PrivateEngines['engines'][number], PrivateEngines['engines'][number]]
    expect(await swarmInfo(manager.socket)).toMatchObject({ state: 'inactive', nodeId: null, manager: false })
    const managerId = await ensureManager(manager.socket, manager.address)
    expect(managerId).toMatch(/^[a-z0-9]{25}$/)
    // Made with Berth's spec: few ended tasks kept per site (Swarm's default is 5).
    const swarm = (await new Docker({ socketPath: manager.socket }).swarmInspect()) as { Spec: { Orchestration: { TaskHistoryRetentionLimit: number } } }
    expect(swarm.Spec.Orchestration.TaskHistoryRetentionLimit).toBe(TASK_HISTORY_LIMIT)
    // A second call leaves the Swarm as it is.
    expect(await ensureManager(manager.socket, manager.address)).toBe(managerId)
    const token = await workerJoinToken(manager.socket)
    expect(token).toMatch(/^SWMTKN-1-/)
    await expect(workerJoinToken(worker.socket)).rejects.toThrow(/manages no Swarm|not a swarm manager/)
    const workerId = await joinSwarm(worker.socket, { token, managerAddress: manager.address, advertiseAddress: worker.address })
    expect(workerId).not.toBe(managerId)
    expect(await swarmInfo(worker.socket)).toMatchObject({ state: 'active', nodeId: workerId, manager: false })
    // Joining again is a no-op; a worker cannot be made a manager of its own Swarm.
    expect(await joinSwarm(worker.socket, { token, managerAddress: manager.address, advertiseAddress: worker.address })).toBe(workerId)
    await expect(ensureManager(worker.socket, worker.address)).rejects.toThrow(/as a worker/)
    await leaveSwarm(worker.socket)
    expect((await swarmInfo(worker.socket)).state).toBe('inactive')
    await leaveSwarm(worker.socket)
  }, 90_000)
})
