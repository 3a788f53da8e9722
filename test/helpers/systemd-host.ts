import type Docker from 'dockerode'
import { mkdirSync, symlinkSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { buildDebianBase, debianBaseTag, DEFAULT_MIRROR, type DebianRecipe } from '../../src/drivers/runtime/debian-base'

/**
 * A Debian 12 "server" with a real systemd, as a container on the test machine's engine, for the
 * end-to-end test of the unit `berth install` writes. The image is made like the PHP image's base
 * (debootstrap into a folder, imported through the engine's API; no registry), with the package
 * cache `berth images build` keeps in ./.berth-data, so the first build takes about two minutes
 * and later runs find the image and take none.
 */
const RECIPE: DebianRecipe = {
  suite: 'bookworm',
  arch: 'amd64',
  // systemd-sysv: /sbin/init; procps: sysctl, which `berth install` runs; iptables (nf_tables
  // backend, as this machine's): the site firewall Berth keeps. The image's tag hashes this
  // recipe, so a change here builds a new image.
  include: ['systemd', 'systemd-sysv', 'procps', 'iptables'],
  // Bump when MASKED or BOOT changes.
  cleanup: 1,
}

/**
 * systemd sets up each unit's sandbox (mount namespaces, seccomp filters, cgroups), so the
 * container has every capability but CAP_SYS_RESOURCE (which the test machine's engine may not
 * hold itself, hence not --privileged), no seccomp profile of its own, a private cgroup namespace
 * whose hierarchies BOOT makes writable (per mount), and the host's network (Berth's edge reaches
 * the sites' containers on their bridges, as on a real host). /proc/sys and /sys stay read-only,
 * as in any container: no sysctl reaches the shared machine (`berth install`'s sysctl -p reports
 * "not applied"). These units, which would touch the machine or wait for a console, are masked.
 */
const MASKED = [
  'getty.target', 'console-getty.service', 'systemd-logind.service', 'systemd-sysctl.service', 'systemd-modules-load.service',
  'systemd-binfmt.service', 'proc-sys-fs-binfmt_misc.automount', 'proc-sys-fs-binfmt_misc.mount', 'systemd-pstore.service',
  'systemd-journald-audit.socket', 'sys-kernel-config.mount', 'sys-kernel-debug.mount', 'sys-kernel-tracing.mount',
  'sys-fs-fuse-connections.mount', 'dev-hugepages.mount', 'systemd-firstboot.service', 'systemd-remount-fs.service',
  'apt-daily.timer', 'apt-daily-upgrade.timer', 'e2scrub_all.timer', 'e2scrub_reap.service', 'fstrim.timer',
]
const BOOT = 'for m in $(cut -d" " -f2 /proc/self/mounts | grep "^/sys/fs/cgroup"); do mount -o remount,bind,rw "$m"; done; exec /sbin/init'

export const SYSTEMD_IMAGE = debianBaseTag(RECIPE, 'berth-test/systemd')

/** The label on everything a test makes here, so that it removes what it made and nothing else. */
export const TEST_LABEL = 'dev.berth.test-run'

/** Builds SYSTEMD_IMAGE unless the engine has it; needs root and debootstrap, like `berth images build`. */
export async function ensureSystemdImage(docker: Docker, progress: (line: string) => void = () => {}): Promise<void> {
  if (await docker.getImage(SYSTEMD_IMAGE).inspect().then(() => true, () => false)) return
  await buildDebianBase(docker, SYSTEMD_IMAGE, {
    recipe: RECIPE,
    mirror: process.env.BERTH_DEBIAN_MIRROR ?? DEFAULT_MIRROR,
    cacheDir: resolve(import.meta.dirname, '..', '..', '.berth-data', 'cache', 'debian'),
    workDir: '/var/tmp',
    env: process.env,
    progress,
    customize: (root) => {
      for (const unit of MASKED) {
        const link = join(root, 'etc/systemd/system', unit)
        rmSync(link, { force: true })
        symlinkSync('/dev/null', link)
      }
      mkdirSync(join(root, 'usr/local/bin'), { recursive: true })
    },
    changes: [
      'ENV container=docker PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      'LABEL dev.berth.test-image=systemd',
      'CMD ["/sbin/init"]',
    ],
  })
}

/** Where runSystemdHost's `netns` is bound in the host: systemd boots in that network namespace. */
export const HOST_NETNS = '/berth-host-netns'

/**
 * Runs the systemd host: `dist` (holding the berth binary) read-only at /opt/berth, the engine's
 * socket at /run/docker.sock and the volumes folder at its own path, as on a host where Berth
 * and Docker run side by side. Returns the started container.
 *
 * With `netns` (a network namespace's file, e.g. /run/netns/NAME: a lab node's), the host is that
 * box instead: systemd boots in that namespace (bound at HOST_NETNS; the container has no network
 * of its own), `dockerSocket` (that box's engine) is its /run/docker.sock, and the machine's
 * volumes are not shared. `docker exec` does not enter it: run commands that need the network
 * through `nsenter -t 1 -n` (execHost's `inNetwork`).
 */
export async function runSystemdHost(docker: Docker, opts: { name: string; runId: string; distDir: string; netns?: string; dockerSocket?: string }): Promise<Docker.Container> {
  // The sites' disks are mounted by the engine's side (drivers/runtime/site-disks.ts) after the
  // host started: they reach it through a slave bind, which needs the machine's / shared, as a
  // systemd-booted machine's is (this one boots without systemd: private).
  if (!opts.netns) Bun.spawnSync(['sh', '-c', 'findmnt -no PROPAGATION / | grep -q shared || mount --make-rshared /'])
  const binds = opts.netns
    ? [`${opts.distDir}:/opt/berth:ro`, `${opts.dockerSocket ?? '/var/run/docker.sock'}:/run/docker.sock`, `${opts.netns}:${HOST_NETNS}:ro`]
    : [`${opts.distDir}:/opt/berth:ro`, '/var/run/docker.sock:/run/docker.sock', '/var/lib/docker/volumes:/var/lib/docker/volumes:rslave']
  const container = await docker.createContainer({
    name: opts.name,
    Image: SYSTEMD_IMAGE,
    Labels: { [TEST_LABEL]: opts.runId },
    // systemd shuts down on SIGRTMIN+3; SIGTERM (Docker's default) would make it re-execute itself.
    StopSignal: 'SIGRTMIN+3',
    Cmd: ['/bin/sh', '-c', opts.netns ? BOOT.replace('exec /sbin/init', `exec nsenter --net=${HOST_NETNS} /sbin/init`) : BOOT],
    Tty: false,
    HostConfig: {
      CapAdd: ['ALL'],
      CapDrop: ['SYS_RESOURCE'],
      SecurityOpt: ['seccomp=unconfined', 'apparmor=unconfined'],
      CgroupnsMode: 'private',
      NetworkMode: opts.netns ? 'none' : 'host',
      Tmpfs: { '/run': 'rw,nosuid,nodev,mode=755', '/run/lock': 'rw,nosuid,nodev,noexec', '/tmp': 'rw,nosuid,nodev' },
      Binds: binds,
      // The loop devices' control, as a machine has it (berth doctor's site_disks check: the sites'
      // disks are mounted through loop devices by the engine's side).
      Devices: [{ PathOnHost: '/dev/loop-control', PathInContainer: '/dev/loop-control', CgroupPermissions: 'rwm' }],
    },
  } as Docker.ContainerCreateOptions)
  await container.start()
  return container
}

/**
 * Waits until the container's systemd has finished booting. `systemctl is-system-running --wait`
 * alone returns at once, with an error, while PID 1 does not listen on its bus yet: it is asked
 * again until it names a state that boot has ended in.
 */
export async function waitForBoot(container: Docker.Container, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const { output } = await execHost(container, ['systemctl', 'is-system-running', '--wait'])
    const state = output.trim().split('\n').pop() ?? ''
    if (/^(running|degraded|maintenance)$/.test(state)) return state
    if (Date.now() > deadline) throw new Error(`systemd did not finish booting within ${timeoutMs} ms (last: ${output.trim()})`)
    await Bun.sleep(200)
  }
}

/** Runs `cmd` in the container as root (`inNetwork`: in systemd's network namespace); returns its exit code and output (stdout and stderr). */
export async function execHost(container: Docker.Container, cmd: string[], opts: { inNetwork?: boolean } = {}): Promise<{ code: number; output: string }> {
  const exec = await container.exec({ Cmd: opts.inNetwork ? ['nsenter', '-t', '1', '-n', '--', ...cmd] : cmd, AttachStdout: true, AttachStderr: true, Tty: true })
  const stream = await exec.start({ Tty: true })
  let output = ''
  stream.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  await new Promise((done) => stream.on('end', done))
  return { code: (await exec.inspect()).ExitCode ?? -1, output: output.replace(/\r\n/g, '\n') }
}
