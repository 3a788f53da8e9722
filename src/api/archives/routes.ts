import { Elysia, t } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { Archive, BackupParams, SnapshotParams } from './model'
import type { ArchivesService } from './service'

const tags = ['Snapshots and backups']

/** Snapshots (vps and dedicated) and daily backups (every plan) of a site's files. */
export const archiveRoutes = (plugins: ApiPlugins, archives: ArchivesService) =>
  new Elysia({ name: 'archive-routes' })
    .use(plugins)
    .post('/sites/:tenant_slug/snapshot/', ({ principal, params }) => archives.createSnapshot(principal, params.tenant_slug), {
      scope: 'write',
      params: SiteParams,
      body: NoBody,
      response: ok(Archive),
      detail: { tags, summary: 'Take a snapshot of the site (vps and dedicated plans); made in the background, poll until ready', operationId: 'createSnapshot' },
    })
    .get('/sites/:tenant_slug/snapshots/', ({ principal, params }) => archives.list(principal, params.tenant_slug, 'snapshot'), {
      scope: 'read',
      params: SiteParams,
      response: ok(t.Array(Archive)),
      detail: { tags, summary: "List the site's snapshots, newest first", operationId: 'listSnapshots' },
    })
    .get('/sites/:tenant_slug/snapshots/:snapshot_id/', ({ principal, params }) => archives.get(principal, params.tenant_slug, 'snapshot', params.snapshot_id), {
      scope: 'read',
      params: SnapshotParams,
      response: ok(Archive),
      detail: { tags, summary: 'Get one snapshot', operationId: 'getSnapshot' },
    })
    .post('/sites/:tenant_slug/snapshots/:snapshot_id/restore/', ({ principal, params }) => archives.restore(principal, params.tenant_slug, 'snapshot', params.snapshot_id), {
      scope: 'write',
      params: SnapshotParams,
      body: NoBody,
      response: ok(Archive),
      detail: { tags, summary: "Replace the site's files with a snapshot's; done in the background", operationId: 'restoreSnapshot' },
    })
    .delete('/sites/:tenant_slug/snapshots/:snapshot_id/', ({ principal, params }) => archives.deleteSnapshot(principal, params.tenant_slug, params.snapshot_id), {
      scope: 'write',
      params: SnapshotParams,
      body: NoBody,
      response: ok(t.Object({ id: t.String({ format: 'uuid' }), deleted: t.Literal(true) })),
      detail: { tags, summary: 'Delete a snapshot and its stored archive', operationId: 'deleteSnapshot' },
    })
    .get('/sites/:tenant_slug/backups/', ({ principal, params }) => archives.list(principal, params.tenant_slug, 'backup'), {
      scope: 'read',
      params: SiteParams,
      response: ok(t.Array(Archive)),
      detail: { tags, summary: "List the site's automatic daily backups (7 kept), newest first", operationId: 'listBackups' },
    })
    .get('/sites/:tenant_slug/backups/:backup_id/', ({ principal, params }) => archives.get(principal, params.tenant_slug, 'backup', params.backup_id), {
      scope: 'read',
      params: BackupParams,
      response: ok(Archive),
      detail: { tags, summary: 'Get one backup', operationId: 'getBackup' },
    })
    .post('/sites/:tenant_slug/backups/:backup_id/restore/', ({ principal, params }) => archives.restore(principal, params.tenant_slug, 'backup', params.backup_id), {
      scope: 'write',
      params: BackupParams,
      body: NoBody,
      response: ok(Archive),
      detail: { tags, summary: "Replace the site's files with a backup's; done in the background", operationId: 'restoreBackup' },
    })
