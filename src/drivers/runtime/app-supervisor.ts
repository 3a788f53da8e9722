/**
 * The supervisor of berth/app (image-app.ts), Python 3 with the standard library only, installed
 * under /usr/local/lib/berth. The daemon half: the front, the live release, switches and settings
 * (the contract: docs/architecture.md "Apps"). Edited here as Python; String.raw keeps it byte for byte.
 */

/** /usr/local/lib/berth/berth_daemon.py */
export const DAEMON_PY = String.raw`"""berth-supervise daemon: the front, the live release's processes, switches and settings."""
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time

import berth_front
import berth_ports
from berth_procs import Proc, log_line

HOME = '/home/site'
RUN = '/tmp/berth'
SOCK = RUN + '/supervise.sock'
ENV_FILE = RUN + '/env.json'
APP = HOME + '/app'
RELEASES = APP + '/releases'
CURRENT = APP + '/current'
REPO = HOME + '/app.git'
HOOK = '/usr/local/lib/berth/pre-receive'
# docker stop waits 10 s before its SIGKILL: the processes get at most this much of it.
STOP_BUDGET = 8
NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
ROOT = re.compile(r'^[A-Za-z0-9._/-]+$')


class Refused(Exception):
    pass


def read_release(rdir):
    real = os.path.realpath(rdir)
    if not os.path.isabs(rdir) or os.path.dirname(real) != RELEASES:
        raise Refused('%s is not a release folder: give /home/site/app/releases/{id}' % rdir)
    try:
        with open(os.path.join(real, '.berth', 'release.json')) as f:
            rel = json.load(f)
    except (OSError, ValueError) as e:
        raise Refused('%s/.berth/release.json is missing or not JSON (%s); write it before the switch' % (real, e))
    procs = rel.get('processes') or {}
    if not isinstance(rel, dict) or not isinstance(procs, dict) or not all(isinstance(v, str) and v.strip() for v in procs.values()):
        raise Refused('release.json: processes must be an object of name -> command')
    root = rel.get('static_root')
    if root is not None and (not isinstance(root, str) or not ROOT.match(root) or '..' in root.split('/') or root.startswith('/')):
        raise Refused('release.json: static_root must be a relative folder of the release, without ..')
    rel['dir'] = real
    rel['processes'] = procs
    rel.setdefault('id', os.path.basename(real))
    return rel


def front_of(rel, port):
    """The front's mode for a release (its web on port)."""
    if 'web' in rel['processes']:
        return {'mode': 'proxy', 'port': port}
    root = os.path.normpath(os.path.join(rel['dir'], rel.get('static_root') or '.'))
    if rel.get('runtime') == 'php':
        return {'mode': 'php', 'root': root}
    if rel.get('static_root') is not None:
        return {'mode': 'static', 'root': root}
    return {'mode': 'none', 'message': 'This release declares no web process.'}


class Live:
    def __init__(self, rel, procs, port):
        self.rel, self.procs, self.port = rel, procs, port


class Daemon:
    def __init__(self):
        self.lock = threading.RLock()
        self.env = None
        self.live = None
        self.started = False
        self.watchers = []
        self.wlock = threading.Lock()
        self.pending = {}
        self.everything = set()
        self.stoppers = []
        # Old web processes switched out and still serving until retire: (proc, front workers).
        self.held = []
        self.front = berth_front.Front(lambda text: log_line('berth', text))
        self.done = threading.Event()

    # ---- start and stop ----
    def run(self):
        for d in (RUN, RUN + '/push', APP, RELEASES, APP + '/incoming', HOME + '/data'):
            os.makedirs(d, exist_ok=True)
        os.chmod(RUN, 0o700)
        self._repo()
        rel = None
        if os.path.islink(CURRENT):
            try:
                rel = read_release(os.path.join(APP, os.readlink(CURRENT)))
            except Refused as e:
                log_line('berth', 'the live release cannot be read: %s' % e)
        if rel is None:
            self.front.start('php', root=HOME + '/public')
        else:
            self.live = Live(rel, {}, berth_ports.saved())
            front = front_of(rel, self.live.port)
            if rel['processes']:
                front = {'mode': 'starting'} if 'web' in rel['processes'] else front
            self.front.start(**front)
        try:
            os.unlink(SOCK)
        except OSError:
            pass
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(SOCK)
        os.chmod(SOCK, 0o600)
        srv.listen(64)
        threading.Thread(target=self._serve, args=(srv,), daemon=True).start()
        signal.signal(signal.SIGTERM, lambda *_: self.done.set())
        signal.signal(signal.SIGINT, lambda *_: self.done.set())
        log_line('berth', 'supervisor started; release %s' % (rel['id'] if rel else 'none (serving public/)'))
        while not self.done.wait(1):
            self.front.keep_running()
        self._shutdown()

    def _repo(self):
        try:
            if not os.path.isdir(REPO):
                subprocess.run(['git', 'init', '--bare', '--quiet', '--initial-branch=main', REPO], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            hook = os.path.join(REPO, 'hooks', 'pre-receive')
            if not (os.path.islink(hook) and os.readlink(hook) == HOOK):
                os.makedirs(os.path.dirname(hook), exist_ok=True)
                if os.path.lexists(hook):
                    os.unlink(hook)
                os.symlink(HOOK, hook)
        except (OSError, subprocess.CalledProcessError) as e:
            log_line('berth', 'could not prepare ~/app.git: %s' % e)

    def _shutdown(self):
        log_line('berth', 'stopping (SIGTERM)')
        procs = list(self.everything)
        grace = lambda p: min(float(p.release.get('stop_grace_seconds') or 10), STOP_BUDGET)
        threads = [threading.Thread(target=p.stop, args=(grace(p),)) for p in procs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.front.stop()
        log_line('berth', 'stopped')

    # ---- processes ----
    def _spawn(self, rel, port, adopted):
        procs = {}
        for name, cmd in rel['processes'].items():
            p = Proc(rel, name, cmd, port if name == 'web' else None, self._process_env(), self._on_state)
            self.everything.add(p)
            procs[name] = p
            p.start(adopted)
        return procs

    def _process_env(self):
        env = {k: v for k, v in os.environ.items() if k not in ('BERTH_SSH', 'PHP_FPM_MAX_CHILDREN')}
        env.update(self.env or {})
        return env

    def _retire(self, procs, workers=None, drain=False):
        """Stops procs gracefully in the background, once the front's old workers are done (and
        with drain, once no connection to a web's port is open: the edge's requests finished)."""
        def go():
            if workers:
                self.front.wait_gone(workers, 30)
            if drain:
                berth_ports.drained([p.port for p in procs if p.port])
            ts = [threading.Thread(target=p.stop, args=(float(p.release.get('stop_grace_seconds') or 10),)) for p in procs]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            for p in procs:
                self.everything.discard(p)
        t = threading.Thread(target=go, daemon=True)
        t.start()
        self.stoppers.append(t)

    def _settle(self):
        self.stoppers = [t for t in self.stoppers if t.is_alive()]

    def _hold(self, web, workers):
        """The old web keeps serving until retire (or RETIRE_AFTER s): the edge may send it
        requests until Berth stored the new port."""
        if web is None:
            if workers:
                self._retire([], workers)
            return
        entry = (web, workers)
        self.held.append(entry)
        timer = threading.Timer(berth_ports.RETIRE_AFTER, lambda: self.retire(entry))
        timer.daemon = True
        timer.start()

    def retire(self, only=None):
        """The old webs held since their switch, stopped once no connection to them is open."""
        with self.lock:
            entries = [e for e in self.held if only is None or e is only]
            self.held = [e for e in self.held if e not in entries]
            for web, workers in entries:
                self._retire([web], workers, drain=True)
        return {'ok': True, 'retiring': len(entries)}

    def _free_slot(self):
        taken = set(p.port for p in self.everything if p.port)
        if self.live:
            taken.add(self.live.port)
        for port in berth_ports.SLOTS:
            if port not in taken:
                return port
        # Every slot taken (many switches within a minute): the oldest held web goes now.
        if self.held:
            web, _ = self.held.pop(0)
            web.stop(min(float(web.release.get('stop_grace_seconds') or 10), STOP_BUDGET))
            self.everything.discard(web)
            return self._free_slot()
        raise Refused('every web port (%d-%d) is in use; try again in a minute' % (berth_ports.SLOTS[0], berth_ports.SLOTS[-1]))


    def _on_state(self, p):
        if self.live and p in self.live.procs.values():
            self.broadcast({'event': 'process', 'name': p.name, 'state': p.state, 'restarts': p.restarts,
                            'last_exit_code': p.last_exit})

    def _bring_up(self, rel, timeout, web_only=False):
        """Starts the release's processes (or just a new web) on the free slot; on a failed health
        check kills them and raises Refused with the reason. Returns (procs, port)."""
        self._settle()
        port = self._free_slot()
        wanted = dict(rel, processes={'web': rel['processes']['web']}) if web_only else rel
        procs = self._spawn(wanted, port, False)
        web = procs.get('web')
        failed = web.wait_healthy(timeout) if web else None
        if failed:
            for p in procs.values():
                p.stop(0)
                self.everything.discard(p)
            error, code = failed
            raise Refused(json.dumps({'ok': False, 'error': error, 'exit_code': code, 'output': web.output()}))
        return procs, port

    # ---- verbs ----
    def switch(self, rdir, timeout):
        started = time.monotonic()
        with self.lock:
            rel = read_release(rdir)
            if self.env is None:
                raise Refused('no settings were pushed since the container started: push them (env) first')
            procs, port = self._bring_up(rel, timeout)
            old = list(self.live.procs.values()) if self.live else []
            workers = self.front.switch(**front_of(rel, port))
            tmp = APP + '/.current-%d' % os.getpid()
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(os.path.relpath(rel['dir'], APP), tmp)
            os.replace(tmp, CURRENT)
            self.live = Live(rel, procs, port)
            for p in procs.values():
                p.adopted.set()
            self.started = True
            web = 'web' in procs
            if web:
                berth_ports.save(port)
            old_web = next((p for p in old if p.name == 'web'), None)
            self._retire([p for p in old if p is not old_web], None if old_web else workers)
            self._hold(old_web, workers)
            log_line('berth', 'switched to %s' % rel['id'])
            return {'ok': True, 'ms': int((time.monotonic() - started) * 1000), 'port': port if web else None}

    def set_env(self, env):
        with self.lock:
            berth_front.write_atomic(ENV_FILE, json.dumps(env), 0o600)
            first = self.env is None
            self.env = env
            live = self.live
            if live is None or not live.rel['processes']:
                return {'ok': True, 'restarted': [], 'port': None}
            if first or not self.started:
                threading.Thread(target=self._first_start, daemon=True).start()
                return {'ok': True, 'restarted': [], 'started': sorted(live.rel['processes']), 'port': self._web_port()}
            restarted = []
            if 'web' in live.rel['processes']:
                procs, port = self._bring_up(live.rel, 60, web_only=True)
                workers = self.front.switch(mode='proxy', port=port)
                old = live.procs['web']
                live.procs['web'], live.port = procs['web'], port
                procs['web'].adopted.set()
                berth_ports.save(port)
                self._hold(old, workers)
                restarted.append('web')
            for name in sorted(live.rel['processes']):
                if name == 'web':
                    continue
                old = live.procs.get(name)
                if old:
                    old.stop(min(float(live.rel.get('stop_grace_seconds') or 10), STOP_BUDGET))
                    self.everything.discard(old)
                live.procs[name] = self._spawn(dict(live.rel, processes={name: live.rel['processes'][name]}), None, True)[name]
                restarted.append(name)
            return {'ok': True, 'restarted': restarted, 'port': self._web_port()}

    def _web_port(self):
        """The port the live release's web listens on, or None (no release, or one without a web)."""
        live = self.live
        return live.port if live and 'web' in live.rel['processes'] else None

    def _first_start(self):
        """The live release once settings arrive (after a start of the container): its processes
        run supervised from the first try; the front proxies once web answers (or failed to)."""
        with self.lock:
            live = self.live
            if self.started or live is None:
                return
            self.started = True
            live.procs = self._spawn(live.rel, live.port, True)
            web = live.procs.get('web')
            if web:
                web.wait_healthy(60)
                self.front.switch(mode='proxy', port=live.port)

    def status(self):
        live = self.live
        procs = [p.view() for p in live.procs.values()] if live else []
        if live and not live.procs:
            # Waiting for the settings: they start once env arrives.
            procs = [{'name': n, 'state': 'starting', 'pid': None, 'restarts': 0, 'last_exit_code': None, 'since': None}
                     for n in sorted(live.rel['processes'])]
        return {'release': live.rel['id'] if live else None, 'runtime': live.rel.get('runtime') if live else None,
                'env': self.env is not None, 'processes': procs, 'port': self._web_port()}

    # ---- watchers and pushes ----
    def broadcast(self, event):
        line = (json.dumps(event) + '\n').encode()
        with self.wlock:
            for conn in list(self.watchers):
                try:
                    conn.sendall(line)
                except OSError:
                    self.watchers.remove(conn)
            return len(self.watchers)

    def _serve(self, srv):
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        try:
            req = json.loads(conn.makefile('rb').readline() or b'{}')
            verb = req.get('verb')
            if verb == 'watch':
                with self.wlock:
                    for event in self.pending.values():
                        conn.sendall((json.dumps(event) + '\n').encode())
                    self.watchers.append(conn)
                return
            try:
                if verb == 'switch':
                    out = self.switch(req['dir'], float(req.get('timeout') or 60))
                elif verb == 'env':
                    out = self.set_env(req['env'])
                elif verb == 'status':
                    out = self.status()
                elif verb == 'retire':
                    out = self.retire()
                elif verb == 'push':
                    event = {'event': 'push', 'id': req['id'], 'ref': req['ref'], 'commit': req['commit'], 'dir': req['dir']}
                    self.pending[req['id']] = event
                    out = {'ok': True, 'watchers': self.broadcast(event)}
                elif verb in ('push-done', 'push-abandon'):
                    # push-abandon: the hook gave up waiting; a later watch must not hear of it.
                    self.pending.pop(req['id'], None)
                    out = {'ok': True}
                else:
                    out = {'ok': False, 'error': 'unknown verb %r' % verb}
            except Refused as e:
                text = str(e)
                out = json.loads(text) if text.startswith('{') else {'ok': False, 'error': text}
            except Exception as e:  # an answer, never a hung client
                out = {'ok': False, 'error': 'the supervisor failed: %s: %s' % (type(e).__name__, e)}
            conn.sendall((json.dumps(out) + '\n').encode())
            conn.close()
        except (OSError, ValueError):
            conn.close()
`
