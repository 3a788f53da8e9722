/**
 * The supervisor's front: nginx on 8080 (its config written into /tmp/berth), proxying to the live
 * web process or serving a static or PHP release, switched by a graceful reload. Python, see
 * app-supervisor.ts.
 */

/** /usr/local/lib/berth/berth_front.py */
export const FRONT_PY = String.raw`"""The front of berth/app: nginx on 8080, its config written into /tmp, switched by a graceful reload."""
import os
import signal
import subprocess
import time

RUN = '/tmp/berth'
CONF = RUN + '/nginx.conf'
SITE_CONF = RUN + '/front.conf'
FPM_SOCK = '/tmp/php-fpm.sock'
HOME = '/home/site'


def gateway():
    """The edge's address as this container sees it: the default route's gateway, or None."""
    try:
        with open('/proc/net/route') as f:
            for line in f.readlines()[1:]:
                parts = line.split()
                if len(parts) > 2 and parts[1] == '00000000' and parts[2] != '00000000':
                    h = parts[2]
                    return '.'.join(str(int(h[i:i + 2], 16)) for i in (6, 4, 2, 0))
    except OSError:
        pass
    return None


def main_conf(gw):
    # X-Forwarded-For is believed from the edge alone (the gateway), as berth/php does; from anyone
    # else the connection's own address counts and the X-Forwarded-* it sent are replaced.
    real_ip = ('set_real_ip_from %s;\n  real_ip_header X-Forwarded-For;\n' % gw) if gw else ''
    edge = ('  %s 1;\n' % gw) if gw else ''
    return '''# nginx of berth/app (the front), written by berth-supervise; runs as uid 1000.
worker_processes 1;
# An old worker still holding a websocket after a switch leaves after this.
worker_shutdown_timeout 30s;
pid /tmp/berth/nginx.pid;
error_log /home/site/logs/error.log warn;
events {
  worker_connections 1024;
}
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  access_log /home/site/logs/access.log combined;
  client_body_temp_path /tmp/berth/nginx-client-body;
  proxy_temp_path /tmp/berth/nginx-proxy;
  fastcgi_temp_path /tmp/berth/nginx-fastcgi;
  uwsgi_temp_path /tmp/berth/nginx-uwsgi;
  scgi_temp_path /tmp/berth/nginx-scgi;
  sendfile on;
  tcp_nopush on;
  server_tokens off;
  keepalive_timeout 65;
  # nginx's default (1000) closed each kept-alive connection, the edge's and the app's, every
  # 1000 requests: 128 new connections per -c64 benchmark run for nothing.
  keepalive_requests 100000;
  client_max_body_size 64m;
  %s  geo $realip_remote_addr $berth_from_edge {
    default 0;
  %s  }
  map $berth_from_edge $berth_proto { 1 $http_x_forwarded_proto; default $scheme; }
  map $berth_from_edge $berth_host { 1 $http_x_forwarded_host; default $host; }
  map $http_upgrade $berth_connection { default upgrade; '' ''; }
  include /tmp/berth/front.conf;
}
''' % (real_ip, edge)


DOTFILES = '''    # Dot files (.env, .git) are never served; .well-known is (RFC 8615).
    location ~ /\\.(?!well-known/) {
      deny all;
    }
'''


def site_conf(mode, root=None, port=None, message=None):
    head = 'server {\n    listen 8080 default_server;\n'
    if mode == 'proxy':
        # Idle connections kept per worker: more than the edge holds open at once (wrk's 64, a
        # busy site's hundreds), else each burst closes and reopens them (with 32: about one
        # request in five opened a new one under 64 clients). Closed idle after 4 s, before
        # Node's own 5 s (keepAliveTimeout) closes them under a request.
        return ('upstream berth_web {\n  server 127.0.0.1:%d;\n  keepalive 256;\n  keepalive_timeout 4s;\n  keepalive_requests 100000;\n}\n' % port) + head + '''    location / {
      proxy_pass http://berth_web;
      proxy_http_version 1.1;
      proxy_set_header Host $host;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $berth_connection;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-Proto $berth_proto;
      proxy_set_header X-Forwarded-Host $berth_host;
      proxy_read_timeout 3600s;
      proxy_send_timeout 3600s;
    }
}
'''
    if mode == 'static':
        return head + '    root %s;\n    index index.html index.htm;\n    location / {\n      try_files $uri $uri/ =404;\n    }\n%s}\n' % (root, DOTFILES)
    if mode == 'php':
        return head + '''    root %s;
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
%s}
''' % (root, DOTFILES)
    # 'starting' and 'none': a short page, 503, and a hint to come back.
    text = (message or 'This site is starting; try again in a few seconds.').replace("'", '').replace('\\', '')
    return head + '''    location / {
      default_type text/html;
      add_header Retry-After 5 always;
      return 503 '<!doctype html><meta charset=utf-8><title>Starting</title><p>%s</p>\\n';
    }
}
''' % text


def write_atomic(path, text, mode=0o644):
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def children(pid):
    try:
        with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
            return set(int(p) for p in f.read().split())
    except OSError:
        return set()


class Front:
    """nginx (and PHP-FPM when a mode needs it), children of the supervisor."""

    def __init__(self, log):
        self.log = log
        self.nginx = None
        self.fpm = None
        self.mode = None
        self.stopping = False

    def start(self, mode, **kw):
        os.makedirs(RUN, exist_ok=True)
        write_atomic(CONF, main_conf(gateway()))
        self._write(mode, **kw)
        self._spawn()

    def _spawn(self):
        self.nginx = subprocess.Popen(['nginx', '-c', CONF, '-g', 'daemon off;'], stdin=subprocess.DEVNULL)

    def keep_running(self):
        """Called every second: nginx or PHP-FPM that died is started again."""
        if self.stopping:
            return
        if self.nginx and self.nginx.poll() is not None:
            self.log('nginx exited with code %s; starting it again' % self.nginx.returncode)
            self._spawn()
        if self.fpm and self.fpm.poll() is not None:
            self.log('php-fpm exited with code %s; starting it again' % self.fpm.returncode)
            self.fpm = None
            self._ensure_fpm()

    def _write(self, mode, root=None, port=None, message=None):
        if mode == 'php':
            self._ensure_fpm()
        write_atomic(SITE_CONF, site_conf(mode, root, port, message))
        self.mode = (mode, root, port)

    def _ensure_fpm(self):
        if self.fpm and self.fpm.poll() is None:
            return
        self.fpm = subprocess.Popen(['php-fpm', '--nodaemonize', '--fpm-config', '/etc/berth/php-fpm.conf'], stdin=subprocess.DEVNULL)
        for _ in range(300):
            if os.path.exists(FPM_SOCK):
                break
            time.sleep(0.01)

    def switch(self, mode, **kw):
        """Rewrites the site's part and reloads gracefully; returns the old workers' pids once new
        workers serve the new config and the old ones left (or are finishing requests in flight)."""
        self._write(mode, **kw)
        master = self.nginx.pid
        old = children(master)
        os.kill(master, signal.SIGHUP)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not (children(master) - old):
            time.sleep(0.005)
        # The old workers close their idle keep-alive connections as they leave; until then a
        # client (the edge) reusing one would still reach the old release. They leave at once
        # unless a request is in flight; those (and websockets) keep them, at most
        # worker_shutdown_timeout, and the old processes are stopped only after (Daemon._retire).
        self.wait_gone(old, 2)
        return old

    def wait_gone(self, pids, timeout):
        """Waits until the old workers have finished their requests (at most timeout s)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not (children(self.nginx.pid) & pids):
                return True
            time.sleep(0.02)
        return False

    def stop(self):
        self.stopping = True
        for p, sig in ((self.nginx, signal.SIGQUIT), (self.fpm, signal.SIGQUIT)):
            if p and p.poll() is None:
                p.send_signal(sig)
        for p in (self.nginx, self.fpm):
            if p:
                try:
                    p.wait(1.5)
                except subprocess.TimeoutExpired:
                    p.kill()
`
