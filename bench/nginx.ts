import { join } from 'node:path'

/**
 * The nginx reference of the proxy benchmarks: the same work as Berth's edge (HTTP/1.1 kept-alive
 * upstream connections, the original Host, the forwarding headers). With `accessLog`, a file
 * path, it writes an access log there as nginx does by default in production: the `combined`
 * format (the format of the edge's log), one unbuffered write per request; without it, none (for
 * sites whose edge writes none either). With `tls`, it terminates TLS as Berth offers it (TLS
 * 1.2 and 1.3), with `tls.http2` HTTP/2 by ALPN as well (`listen ... ssl http2`: Debian 12's
 * nginx 1.22 predates the `http2 on` directive of 1.25.1, which means the same).
 */
export function nginxProxyConf(o: { root: string; workers: number; port: number; upstream: string; accessLog?: string; tls?: { cert: string; key: string; http2?: boolean } }): string {
  const { root } = o
  return `worker_processes ${o.workers};
user root;
pid ${root}/nginx.pid;
error_log ${root}/error.log warn;
events { worker_connections 4096; }
http {
  access_log ${o.accessLog ? `${o.accessLog} combined` : 'off'};
  client_body_temp_path ${root}/client; proxy_temp_path ${root}/proxy;
  fastcgi_temp_path ${root}/fastcgi; uwsgi_temp_path ${root}/uwsgi; scgi_temp_path ${root}/scgi;
  upstream site { server ${o.upstream}; keepalive 64; keepalive_requests 100000; }
  server {
    listen 127.0.0.1:${o.port}${o.tls ? ' ssl' : ''}${o.tls?.http2 ? ' http2' : ''};${o.tls ? `
    ssl_certificate ${o.tls.cert};
    ssl_certificate_key ${o.tls.key};
    ssl_protocols TLSv1.2 TLSv1.3;` : ''}
    keepalive_requests 100000;
    location / {
      proxy_pass http://site;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $http_host;
    }
  }
}
`
}

/** nginx's binary, and its command line for a config written under `root`. */
export const nginxCommand = (root: string) => [Bun.which('nginx') ?? '/usr/sbin/nginx', '-p', root, '-c', join(root, 'nginx.conf'), '-g', 'daemon off;']
