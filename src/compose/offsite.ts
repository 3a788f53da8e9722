/** Copies off the box (issue 25): built only when `offsite.url` is set. */
import type { ArchiveEvents } from '../domain/archives'
import { BoxCopies, type BoxIdentity, type makeOffsiteCopiesRepository, newSigningKey, OffsiteCopier, publicKeyOf, RestoreDrill, type SigningKey } from '../domain/offsite'
import { LocalArchiveStore } from '../drivers/archives/local'
import type { ArchiveStore } from '../drivers/archives/types'
import { newIdentity, open, recipientOf, seal, sealBytes } from '../drivers/offsite/age'
import { destinationOf, selectOffsite } from '../drivers/offsite/select'
import { TlsFolder } from '../drivers/offsite/tls-folder'
import type { OffsiteDestination } from '../drivers/offsite/types'
import type { Store } from '../store/store'
import { StoreCopies } from '../store/copy'
import { VERSION } from '../version'
import type { Core } from './core'
import { databasePath, keepSetting, offsiteWorkDir, readSetting, secretsKeyPath, tlsDir } from './installation'
import { readSecretsKeyText } from '../drivers/secrets/box-key'

/** The offsite area's repository, as its index's factory makes it (the class stays the area's own). */
type OffsiteCopiesRepository = ReturnType<typeof makeOffsiteCopiesRepository>

/** The settings key of the box's own age identity (see BoxIdentity). */
export const BOX_IDENTITY_SETTING = 'offsite_box_identity'
/** The settings key of the box's signing key (see SigningKey). */
export const SIGNING_KEY_SETTING = 'offsite_signing_key'

export interface Offsite {
  copier: OffsiteCopier
  destination: OffsiteDestination
  /** The hoster's recipients and the box's own, which every copy is sealed for. */
  identity: BoxIdentity
  /** Signs every manifest; its public half is what `berth restore --signing-key` wants. */
  signing: SigningKey
}

/**
 * The copier over the destination `offsite.url` names, or null when it is empty (the embedded
 * default: nothing leaves the box). `events` (the sites area's) tells it of archives turning
 * ready or going; `berth offsite push` builds it without them, and the pass finds them itself.
 */
export function buildOffsite(core: Pick<Core, 'config' | 'store' | 'clock' | 'log' | 'instanceId'> & { repo: OffsiteCopiesRepository; archiveStore?: ArchiveStore }, events?: ArchiveEvents, opts: { destination?: OffsiteDestination } = {}): Offsite | null {
  const { config, store, clock, log, repo } = core
  if (!config.offsite.url) return null
  // Tests hand in the destination (a folder that fails on cue); otherwise the one the URL names.
  const destination = opts.destination ?? selectOffsite(config.offsite)!
  followDestination(core, destinationOf(config.offsite))
  const sealing = { seal, sealBytes, open }
  const identity = boxIdentity(store)
  const signing = signingKeyOf(store)
  const intervalMs = config.offsite.storeIntervalSeconds * 1000
  const box = new BoxCopies({
    repo, destination, sealing, signing, clock, log, intervalMs,
    storeCopies: new StoreCopies(databasePath(config), offsiteWorkDir(config)),
    tls: new TlsFolder(tlsDir(config)),
    secretsKey: { text: async () => readSecretsKeyText(secretsKeyPath(config)) },
    box: { version: VERSION, instanceId: core.instanceId, sitesDomain: config.sites.domain },
  })
  const copier = new OffsiteCopier({
    repo, destination, sealing, identity, box, clock, log, intervalMs,
    // The composition's own; a test that builds the copier alone (test/helpers/offsite.ts) gets one made here.
    archives: core.archiveStore ?? new LocalArchiveStore(config.archives.dir),
    recipients: config.offsite.ageRecipients,
    drill: new RestoreDrill({ repo, destination, sealing, identity, clock, log }),
    keepDays: config.archives.backupsKept,
  })
  events?.subscribe({ ready: (row) => copier.archiveReady(row), discarded: (row) => copier.archiveDiscarded(row) })
  return { copier, destination, identity, signing }
}

/**
 * A destination other than the one the copies were made to (offsite.url or the endpoint changed)
 * holds none of them: they are all made again there (OffsiteCopiesRepository.followDestination).
 */
function followDestination(core: Pick<Core, 'clock' | 'log'> & { repo: OffsiteCopiesRepository }, destination: string): void {
  const moved = core.repo.followDestination(destination, core.clock.now())
  if (moved) {
    core.log.warn('the off-box destination changed: every archive is copied again to the new one, with the store and a manifest; the copies at the old one are left as they are', {
      previous: moved.previous, destination, archives: moved.requeued,
    })
  }
}

/** The box's identity: made on first use and kept in the store's settings (0600 with the store). */
function boxIdentity(store: Store): BoxIdentity {
  let kept: Promise<string> | undefined
  const make = async () => readSetting(store, BOX_IDENTITY_SETTING) ?? keepSetting(store, BOX_IDENTITY_SETTING, await newIdentity())
  // A failure (the store busy) is not kept: the next call tries again.
  const identity = () => (kept ??= make().catch((err) => {
    kept = undefined
    throw err
  }))
  let recipient: Promise<string> | undefined
  return { identity, recipient: () => (recipient ??= identity().then(recipientOf)) }
}


/**
 * The box's signing key: made on first use and kept in the store's settings (0600 with the store,
 * and inside each store copy, so a rebuilt box signs with the same key and the hoster's copy of
 * its public half stays right).
 */
export function signingKeyOf(store: Store): SigningKey {
  let kept: string | undefined
  const privateKey = () => (kept ??= readSetting(store, SIGNING_KEY_SETTING) ?? keepSetting(store, SIGNING_KEY_SETTING, newSigningKey()))
  let publicKey: string | undefined
  return { privateKey, publicKey: () => (publicKey ??= publicKeyOf(privateKey())) }
}
