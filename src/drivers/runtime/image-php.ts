import { defaultPhpPage } from './default-page'
import { homeRepair, lineLogger } from './image-home'
import { PHP_ENV_FILE } from './php-env'
import { makeTar, type TarEntry } from './tar'

const SITE = { uid: 1000, gid: 1000 }

/**
 * nginx as the site user: no `user` directive (it only applies to a root master), port 8080,
 * pid and temporary files under /tmp (a tmpfs; the root filesystem is read-only), logs in the
 * site's home where the Logs API reads them.
 */
export const NGINX_CONF = `# nginx of berth/php; runs as uid 1000 with a read-only root filesystem.
worker_processes 1;
pid /tmp/nginx.pid;
error_log /home/site/logs/error.log warn;

events {
  worker_connections 512;
}

http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  access_log /home/site/logs/access.log combined;
  client_body_temp_path /tmp/nginx-client-body;
  proxy_temp_path /tmp/nginx-proxy;
  fastcgi_temp_path /tmp/nginx-fastcgi;
  uwsgi_temp_path /tmp/nginx-uwsgi;
  scgi_temp_path /tmp/nginx-scgi;
  sendfile on;
  tcp_nopush on;
  server_tokens off;
  keepalive_timeout 65;
  client_max_body_size 64m;

  # X-Forwarded-For is believed from Berth's edge only: the address it connects from, this
  # container's gateway (on one box the host's end of the site's network; on a cluster's node the
  # agent's forward, which the kernel masquerades as that same address). berth-start writes it
  # here at each start. Anyone else's header is ignored, and the connection's own address logged.
  # The edge sets the header to the visitor's address, dropping what the visitor sent.
  include /tmp/berth-real-ip.conf;

  server {
    listen 8080 default_server;
    root /home/site/public;
    # index.html first: a site that uploads one replaces the default index.php.
    index index.html index.htm index.php;

    location / {
      try_files $uri $uri/ /index.php$is_args$args;
    }

    location ~ \\.php$ {
      try_files $uri =404;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
      fastcgi_pass unix:/tmp/php-fpm.sock;
    }

    # Dot files (.env, .git, .htpasswd) are never served; .well-known is (RFC 8615).
    location ~ /\\.(?!well-known/) {
      deny all;
    }
  }
}
`

/** PHP-FPM as the site user; `PHP_FPM_MAX_CHILDREN` comes from berth-start. */
export const PHP_FPM_CONF = `; PHP-FPM of berth/php; runs as uid 1000 (no user/group: they only apply to a root master).
[global]
pid = /tmp/php-fpm.pid
error_log = /home/site/logs/php.log
daemonize = no
; No systemd in a site container.
systemd_interval = 0
; A reload (SIGUSR2: a deploy, a change of the site's variables) lets each worker finish its
; request for up to this long before it is stopped.
process_control_timeout = 20s

[site]
listen = /tmp/php-fpm.sock
; ondemand: an idle site keeps no worker in memory.
pm = ondemand
pm.max_children = \${PHP_FPM_MAX_CHILDREN}
pm.process_idle_timeout = 60s
pm.max_requests = 1000
catch_workers_output = yes
decorate_workers_output = no
security.limit_extensions = .php
php_admin_flag[log_errors] = on
php_admin_value[error_log] = /home/site/logs/php.log
php_value[session.save_path] = /tmp
php_admin_value[upload_tmp_dir] = /tmp
php_admin_value[sys_temp_dir] = /tmp
; The site's settings and secrets fill $_ENV too (getenv and $_SERVER have them either way).
php_value[variables_order] = EGPCS
; The site's settings and secrets: env[NAME] lines Berth writes at each start and change (php-env.ts).
include = ${PHP_ENV_FILE}
`

/**
 * sshd as the site user (vps and dedicated plans; design.md "Containers"): public keys only, one
 * user, on 2222 inside the container (Berth publishes it on a host port). Run unprivileged, sshd
 * skips privilege separation and can only log in its own user, which is all a site needs. The
 * host key lives in the site's home, so it survives the container being recreated.
 */
export const SSHD_CONF = `# sshd of berth/php; runs as uid 1000 when the site's plan has SSH (BERTH_SSH=1).
Port 2222
HostKey /home/site/.ssh/host/ssh_host_ed25519_key
PidFile /tmp/sshd.pid
AllowUsers site
PermitRootLogin no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
AuthenticationMethods publickey
UsePAM no
StrictModes yes
PermitUserEnvironment no
X11Forwarding no
AllowAgentForwarding no
AllowTcpForwarding no
PermitTunnel no
PrintMotd no
PrintLastLog no
Subsystem sftp internal-sftp
`

/** berth-start's lines that size PHP-FPM from the container's memory limit, at about 40 MB a worker (berth/php and berth/app). */
export const FPM_CHILDREN = `# The pool file of the site's variables, empty until Berth writes it (php-env.ts).
(umask 077 && : > ${PHP_ENV_FILE})
limit=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || echo max)
children=8
if [[ $limit =~ ^[0-9]+$ ]]; then
  children=$(( limit / 1048576 / 40 ))
  (( children < 2 )) && children=2
  (( children > 32 )) && children=32
fi
export PHP_FPM_MAX_CHILDREN=$children
`

/** berth-start's lines that start sshd as the site user when the plan has SSH (BERTH_SSH=1), in berth/php and berth/app. */
export const SSHD_START = `if [[ -n \${BERTH_SSH:-} ]]; then
  # StrictModes wants ~/.ssh private to the user; the host key is made once, on the volume.
  # A ~/.ssh that is a link would stop sshd, and with it the container (wait -n).
  aside_unless_dir .ssh
  mkdir -p /home/site/.ssh/host && chmod 700 /home/site/.ssh /home/site/.ssh/host
  [[ -s /home/site/.ssh/host/ssh_host_ed25519_key ]] || ssh-keygen -q -t ed25519 -N '' -C 'site host key' -f /home/site/.ssh/host/ssh_host_ed25519_key
  # sshd's log through a line logger, which follows the log's rotation (image-home.ts).
  ${lineLogger('mawk -W interactive', '/tmp/berth-sshd.log', '/home/site/logs/ssh.log').trimEnd().replace(/\n/g, '\n  ')}
  /usr/sbin/sshd -D -e -f /etc/berth/sshd_config 2>/tmp/berth-sshd.log &
fi
`

/**
 * Starts PHP-FPM and nginx as the site user under docker-init. The container ends when either
 * exits, so Docker's restart policy brings the pair back together; SIGTERM from docker stop is
 * passed to both. nginx waits (at most 3 s) for PHP-FPM's socket. Workers are sized from the memory limit at about 40 MB each.
 */
export const START = `#!/bin/bash
set -u
${homeRepair(['error.log', 'access.log', 'php.log', 'ssh.log'])}${FPM_CHILDREN}# The edge's address as this container sees it: the default route's gateway (/proc/net/route,
# little-endian hex). nginx believes X-Forwarded-For from it alone; none without a route.
gateway=
while read -r _ destination via _; do
  if [[ $destination == 00000000 && $via =~ ^[0-9A-Fa-f]{8}$ && $via != 00000000 ]]; then gateway=$via; break; fi
done < /proc/net/route
if [[ -n $gateway ]]; then
  printf 'set_real_ip_from %d.%d.%d.%d;\nreal_ip_header X-Forwarded-For;\n' 0x\${gateway:6:2} 0x\${gateway:4:2} 0x\${gateway:2:2} 0x\${gateway:0:2} > /tmp/berth-real-ip.conf
else
  : > /tmp/berth-real-ip.conf
fi
${SSHD_START}php-fpm --nodaemonize --fpm-config /etc/berth/php-fpm.conf &
# nginx starts once PHP-FPM listens, so the first request does not meet a 502.
for _ in $(seq 300); do [[ -S /tmp/php-fpm.sock ]] && break; sleep 0.01; done
nginx -c /etc/berth/nginx.conf -g 'daemon off;' &
trap 'kill -TERM $(jobs -p) 2>/dev/null' TERM INT
wait -n
status=$?
kill -TERM $(jobs -p) 2>/dev/null
wait
exit $status
`

/** The final image on top of the debootstrapped base: the site user, configs, default pages. */
export function phpDockerfile(baseTag: string): string {
  return `FROM ${baseTag}
RUN groupadd --gid 1000 site \\
 && useradd --uid 1000 --gid 1000 --home-dir /home/site --no-create-home --shell /bin/bash site \\
 && usermod -p '*' site \\
 && ln -s "$(ls /usr/sbin/php-fpm* | head -n 1)" /usr/local/sbin/php-fpm
ADD rootfs.tar /
ENV HOME=/home/site
USER 1000:1000
WORKDIR /home/site
EXPOSE 8080 2222
CMD ["/usr/local/bin/berth-start"]
`
}

/** The build context of berth/php on top of `baseTag`. */
export function phpContext(baseTag: string): Uint8Array {
  const overlay: TarEntry[] = [
    { type: 'dir', path: 'etc/berth', mode: 0o755 },
    { type: 'file', path: 'etc/berth/nginx.conf', data: NGINX_CONF },
    { type: 'file', path: 'etc/berth/php-fpm.conf', data: PHP_FPM_CONF },
    { type: 'file', path: 'etc/berth/sshd_config', data: SSHD_CONF },
    { type: 'file', path: 'usr/local/bin/berth-start', data: START, mode: 0o755 },
    { type: 'dir', path: 'home/site', mode: 0o755, ...SITE },
    { type: 'dir', path: 'home/site/public', mode: 0o755, ...SITE },
    { type: 'dir', path: 'home/site/logs', mode: 0o755, ...SITE },
    { type: 'file', path: 'home/site/public/index.php', data: defaultPhpPage(), mode: 0o644, ...SITE },
  ]
  return makeTar([
    { type: 'file', path: 'Dockerfile', data: phpDockerfile(baseTag) },
    { type: 'file', path: 'rootfs.tar', data: makeTar(overlay) },
  ])
}
