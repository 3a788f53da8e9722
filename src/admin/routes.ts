/**
 * The admin API's operations over the facades (admin/facades.ts): one handler per AdminOp, the
 * same whether `berth serve` runs it for a client of its socket or a read-only command runs it
 * in its own process because no server runs (cli/admin.ts). Inputs are checked here: a missing
 * or mistyped field is refused as `invalid`, naming it.
 */
import type { PlanSeed } from '../config/schema'
import type { SiteStatus } from '../core/enums'
import { invalid } from '../domain/errors'
import type { AdminFacades } from './facades'
import type { AdminLine, AdminOp, AdminStep } from './protocol'
import { stepLine } from './steps'

type Input = Record<string, unknown>
/** Hands the client a progress line (admin/protocol.ts). */
export type Progress = (line: Extract<AdminLine, { progress: string }>) => void
type Handler = (f: AdminFacades, input: Input, progress: Progress) => unknown

/** A refusal the client prints as it is and exits 1 with: the operation needs what this box does not run. */
export class AdminUnsupportedError extends Error {
  constructor(readonly kind: 'no_cluster' | 'no_offsite', message: string) {
    super(message)
  }
}

const text = (input: Input, name: string): string => {
  const v = input[name]
  if (typeof v !== 'string' || v === '') throw invalid(name, `${name} must be a non-empty string`)
  return v
}
const optionalText = (input: Input, name: string): string | undefined => (input[name] === undefined || input[name] === null ? undefined : text(input, name))
const flag = (input: Input, name: string): boolean => input[name] === true

function nodesOf(f: AdminFacades): NonNullable<AdminFacades['nodes']> {
  if (!f.nodes) throw new AdminUnsupportedError('no_cluster', 'this box runs no cluster (cluster.enabled is false); see docs/cluster.md, "Turning it on"')
  return f.nodes
}

const HANDLERS: Record<AdminOp, Handler> = {
  'sites/list': (f, i) => f.sites.list({ account: optionalText(i, 'account'), status: optionalText(i, 'status') as SiteStatus | undefined }),
  'sites/show': (f, i) => f.sites.show(text(i, 'slug')),
  'sites/suspend': (f, i) => f.sites.suspend(text(i, 'slug'), text(i, 'reason')),
  'sites/resume': (f, i) => f.sites.resume(text(i, 'slug')),
  'sites/delete': (f, i) => f.sites.delete(text(i, 'slug'), { now: flag(i, 'now') }),
  'sites/move': (f, i, progress) => {
    const { mover } = nodesOf(f)
    progress({ progress: `moving ${text(i, 'slug')} to ${text(i, 'to')}: archive, stop, restore there, start, wait for its answer` })
    return mover.move(text(i, 'slug'), text(i, 'to'), stepsTo(progress))
  },
  'accounts/list': (f) => f.accounts.list(),
  'accounts/show': (f, i) => f.accounts.show(text(i, 'id')),
  'accounts/suspend': (f, i) => f.accounts.suspend(text(i, 'id'), text(i, 'reason')),
  'accounts/resume': (f, i) => f.accounts.resume(text(i, 'id')),
  'plans/list': (f, i) => f.plans.list({ includeDeprecated: flag(i, 'include_deprecated') }),
  'plans/add': (f, i) => {
    if (typeof i.seed !== 'object' || i.seed === null) throw invalid('seed', 'seed must be the plan to add, as berth plans add makes it')
    return f.plans.add(i.seed as PlanSeed)
  },
  'plans/deprecate': (f, i) => f.plans.setDeprecated(text(i, 'slug'), flag(i, 'deprecated')),
  'nodes/list': (f) => nodesOf(f).service.list(),
  'nodes/drain': (f, i, progress) => {
    const { service } = nodesOf(f)
    if (!flag(i, 'move')) return service.drain(text(i, 'id'))
    progress({ progress: `draining ${text(i, 'id')} and moving its sites off, one by one` })
    return service.drainAndMove(text(i, 'id'), stepsTo(progress))
  },
  'nodes/undrain': (f, i) => nodesOf(f).service.undrain(text(i, 'id')),
  'nodes/remove': (f, i) => nodesOf(f).service.remove(text(i, 'id')),
  'nodes/evacuate': (f, i, progress) => {
    const { service } = nodesOf(f)
    progress({ progress: `evacuating ${text(i, 'id')}: asking its agent, then bringing each site back from its newest archive` })
    return service.evacuate(text(i, 'id'), { force: flag(i, 'force'), onStep: stepsTo(progress) })
  },
  'nodes/set': (f, i) => nodesOf(f).service.setPublicAddress(text(i, 'id'), optionalText(i, 'public_address') ?? null),
  'nodes/token': (f) => nodesOf(f).token(),
  'offsite/push': (f, _i, progress) => {
    if (!f.offsite) throw new AdminUnsupportedError('no_offsite', 'offsite.url is empty: copies off the box are off; set offsite.url and offsite.age_recipients (docs/configuration.md)')
    progress({ progress: 'copying what waits, then the store and its manifest' })
    return f.offsite.push(stepsTo(progress))
  },
  'offsite/status': (f) => f.offsiteStatus(),
}

/** Runs one operation; a refusal is thrown (DomainError, AdminUnsupportedError) for the caller to put on the wire or print. */
export async function runAdminOp(facades: AdminFacades, op: AdminOp, input: Input, progress: Progress = () => {}): Promise<unknown> {
  return await HANDLERS[op](facades, input, progress)
}

/** A long operation's steps as progress lines: the worded line and the step itself. */
const stepsTo = (progress: Progress): ((step: AdminStep) => void) => (step) => progress({ progress: stepLine(step), step })
