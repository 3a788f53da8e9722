import { Type as t, type Static } from '@sinclair/typebox'

export const SshHostKey = t.Object({
  type: t.String(),
  public_key: t.String({ description: 'The host key as it appears in known_hosts (type and base64).' }),
  fingerprint: t.String({ description: 'SHA256:... as ssh-keygen -l prints it; compare with what ssh shows on first connection.' }),
})

export const SshInfo = t.Object({
  host: t.String(),
  port: t.Integer(),
  username: t.String(),
  command: t.String({ description: 'A ready command line; add -i KEYFILE when the key is not your default.' }),
  host_keys: t.Array(SshHostKey, { description: 'Empty while the site is not running.' }),
  known_hosts: t.Array(t.String(), { description: 'Lines for ~/.ssh/known_hosts, so the first connection needs no prompt.' }),
  warning: t.Union([t.String(), t.Null()], {
    description: "null, or why `host` may not be reachable from where you are: the server the site runs on has no public address set, so `host` is its address on the hoster's private network; ask the hoster to set one.",
  }),
})

export const SshKeyView = t.Object({
  key_id: t.String({ description: 'Hex SHA-256 of the key; the key is removed by this id.' }),
  type: t.String(),
  fingerprint: t.String(),
  comment: t.String(),
})

export const SshKeyAdded = t.Object({
  ...SshKeyView.properties,
  added: t.Boolean({ description: 'false when the key was already installed (nothing changed).' }),
})
export const SshGitPush = t.Object({
  remote: t.String({ description: 'The git remote to push to: ssh://site@HOST:PORT/~/app.git.', examples: ['ssh://site@203.0.113.10:2201/~/app.git'] }),
  command: t.String({ description: 'A ready command line that adds the remote as `berth`.', examples: ['git remote add berth ssh://site@203.0.113.10:2201/~/app.git'] }),
  branches: t.Array(t.String(), { description: 'The branches a push deploys; a push to another is refused with what to type instead (git push berth BRANCH:main).', examples: [['main', 'master']] }),
  moved: t.Boolean({ description: 'true when this call moved the site to the app image (its container restarted once, its files kept); false when it already was an app site.' }),
})

export type SshGitPushView = Static<typeof SshGitPush>
export type SshInfoView = Static<typeof SshInfo>
export type SshKeyItem = Static<typeof SshKeyView>
export type SshKeyAddedView = Static<typeof SshKeyAdded>
