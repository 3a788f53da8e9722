import { Elysia } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { DeletedEntry, FileContent, DeleteBody, FileListing, ListQuery, MkdirBody, ReadQuery, UploadBody, WriteBody, WrittenEntry } from './model'
import type { FilesService } from '../../domain/files'

const tags = ['Files']

/** The files API (docs/api.md, "Files"): a site's home folder; GETs need read, POSTs write. */
export const fileRoutes = (plugins: ApiPlugins, files: FilesService) =>
  new Elysia({ name: 'file-routes' })
    .use(plugins)
    .get('/sites/:tenant_slug/files/', ({ site, query }) => files.list(site, query.path), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      query: ListQuery,
      response: ok(FileListing),
      errors: [409],
      detail: { tags, summary: "List a folder of the site's home", operationId: 'listFiles' },
    })
    .get('/sites/:tenant_slug/files/read/', ({ site, query }) => files.read(site, query.path), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      query: ReadQuery,
      response: ok(FileContent),
      errors: [409, 413, 415],
      detail: { tags, summary: 'Read a text file (UTF-8, at most 512 KB; 413 over it, 415 when not text)', operationId: 'readFile' },
    })
    .post('/sites/:tenant_slug/files/write/', ({ site, body }) => files.write(site, body), {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: WriteBody,
      response: ok(WrittenEntry),
      errors: [507],
      detail: { tags, summary: 'Write or replace a text file (atomically; missing folders are created)', operationId: 'writeFile' },
    })
    .post('/sites/:tenant_slug/files/upload/', ({ site, body }) => files.upload(site, body), {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: UploadBody,
      response: ok(WrittenEntry),
      errors: [507],
      detail: { tags, summary: 'Upload a binary file as base64 (at most 10 MiB decoded)', operationId: 'uploadFile' },
    })
    .post('/sites/:tenant_slug/files/mkdir/', ({ site, body }) => files.mkdir(site, body), {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: MkdirBody,
      response: ok(WrittenEntry),
      errors: [507],
      detail: { tags, summary: 'Create a folder and any missing parents (an existing folder is no error)', operationId: 'makeDirectory' },
    })
    .post('/sites/:tenant_slug/files/delete/', ({ site, body }) => files.delete(site, body), {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: DeleteBody,
      response: ok(DeletedEntry),
      detail: { tags, summary: 'Delete a file, or a folder with everything in it', operationId: 'deleteFile' },
    })
