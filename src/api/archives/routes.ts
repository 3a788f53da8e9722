import { Elysia, t } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { Archive, BackupParams, SnapshotParams } from './model'
import type { ArchivesService } from '../../domain/archives'

const tags = ['Snapshots and backups']

/** Snapshots (vps and dedicated) and daily backups (every plan) of a site's files. */
export const archiveRoutes = (plugins: ApiPlugins, archives: ArchivesService) =>
  new Elysia({ name: 'archive-routes' })
    .use(plugins)
    .post('/sites/:tenant_slug/snapshot/', ({ site }) => archives.createSnapshot(site), {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: NoBody,
      response: ok(Archive),
      errors: [507],
      detail: { tags, summary: 'Take a snapshot of the site (vps and dedicated plans); made in the background, poll until ready', operationId: 'createSnapshot' },
    })
    .get('/sites/:tenant_slug/snapshots/', ({ site }) => archives.list(site, 'snapshot'), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(t.Array(Archive)),
      detail: { tags, summary: "List the site's snapshots, newest first", operationId: 'listSnapshots' },
    })
    .get('/sites/:tenant_slug/snapshots/:snapshot_id/', ({ site, params }) => archives.get(site, 'snapshot', params.snapshot_id), {
      scope: 'read',
      site: 'owned',
      params: SnapshotParams,
      response: ok(Archive),
      detail: { tags, summary: 'Get one snapshot', operationId: 'getSnapshot' },
    })
    .post('/sites/:tenant_slug/snapshots/:snapshot_id/restore/', ({ site, params }) => archives.restore(site, 'snapshot', params.snapshot_id), {
      scope: 'write',
      site: 'changeable',
      params: SnapshotParams,
      body: NoBody,
      response: ok(Archive),
      detail: { tags, summary: "Replace the site's files with a snapshot's; done in the background", operationId: 'restoreSnapshot' },
    })
    .delete('/sites/:tenant_slug/snapshots/:snapshot_id/', ({ site, params }) => archives.deleteSnapshot(site, params.snapshot_id), {
      scope: 'write',
      site: 'changeable',
      params: SnapshotParams,
      body: NoBody,
      response: ok(t.Object({ id: t.String({ format: 'uuid' }), deleted: t.Literal(true) })),
      detail: { tags, summary: 'Delete a snapshot and its stored archive', operationId: 'deleteSnapshot' },
    })
    .get('/sites/:tenant_slug/backups/', ({ site }) => archives.list(site, 'backup'), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(t.Array(Archive)),
      detail: { tags, summary: "List the site's automatic daily backups (7 kept), newest first", operationId: 'listBackups' },
    })
    .get('/sites/:tenant_slug/backups/:backup_id/', ({ site, params }) => archives.get(site, 'backup', params.backup_id), {
      scope: 'read',
      site: 'owned',
      params: BackupParams,
      response: ok(Archive),
      detail: { tags, summary: 'Get one backup', operationId: 'getBackup' },
    })
    .post('/sites/:tenant_slug/backups/:backup_id/restore/', ({ site, params }) => archives.restore(site, 'backup', params.backup_id), {
      scope: 'write',
      site: 'changeable',
      params: BackupParams,
      body: NoBody,
      response: ok(Archive),
      detail: { tags, summary: "Replace the site's files with a backup's; done in the background", operationId: 'restoreBackup' },
    })
