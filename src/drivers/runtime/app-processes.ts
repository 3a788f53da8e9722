/**
 * The supervisor's processes: one declared process of a release kept running (back-off, crash
 * loop, graceful stop, its lines to ~/logs/app.log). Python, see app-supervisor.ts.
 */

/** /usr/local/lib/berth/berth_procs.py */
export const PROCS_PY = String.raw`"""A declared process of a release, kept running by berth-supervise."""
import collections
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

LOG = '/home/site/logs/app.log'
BACKOFF = (1, 2, 4, 8, 16, 30)
CRASH_WINDOW = 60
CRASH_EXITS = 3


def now_iso(t=None):
    t = time.time() if t is None else t
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(t)) + '.%03dZ' % int((t % 1) * 1000)


def log_line(name, text):
    """One line of ~/logs/app.log, the file opened for it: a rotation needs no signal."""
    try:
        with open(LOG, 'a', encoding='utf-8', errors='replace') as f:
            f.write('%s %s: %s\n' % (now_iso(), name, text))
    except OSError:
        pass


def answers(port, path, timeout=2.0):
    """True when GET path on 127.0.0.1:port answers with any status below 500."""
    try:
        with urllib.request.urlopen(urllib.request.Request('http://127.0.0.1:%d%s' % (port, path)), timeout=timeout) as res:
            return res.status < 500
    except urllib.error.HTTPError as e:
        return e.code < 500
    except (OSError, ValueError):
        return False


class Proc:
    def __init__(self, release, name, command, port, env, on_state):
        self.release, self.name, self.command, self.port = release, name, command, port
        self.env = env
        self.on_state = on_state
        self.state = 'starting'
        self.since = now_iso()
        self.pid = None
        self.restarts = 0
        self.last_exit = None
        self.popen = None
        self.tail = collections.deque(maxlen=40)
        self.exits = collections.deque()
        self.started_at = 0.0
        self.backoff_i = 0
        self.stopping = False
        self.adopted = threading.Event()
        self.wake = threading.Event()
        self.first_exit = threading.Event()
        self.gone = threading.Event()
        self.cv = threading.Condition()

    def start(self, adopted):
        if adopted:
            self.adopted.set()
        threading.Thread(target=self._run, daemon=True).start()

    def view(self):
        return {'name': self.name, 'state': self.state, 'pid': self.pid, 'restarts': self.restarts,
                'last_exit_code': self.last_exit, 'since': self.since}

    def _set(self, state):
        if state != self.state:
            self.state = state
            self.since = now_iso()
            if self.adopted.is_set():
                self.on_state(self)

    def _environment(self):
        env = dict(self.env)
        if self.port:
            env['PORT'] = str(self.port)
        env['BERTH_RELEASE'] = self.release['id']
        env['BERTH_PROCESS'] = self.name
        return env

    def _crashing(self):
        t = time.monotonic()
        while self.exits and t - self.exits[0] > CRASH_WINDOW:
            self.exits.popleft()
        return len(self.exits) >= CRASH_EXITS

    def _run(self):
        while not self.stopping:
            code = self._once()
            self.last_exit = code
            self.first_exit.set()
            if self.stopping:
                break
            while not self.adopted.is_set() and not self.stopping:
                self.wake.wait(0.1)
            if self.stopping:
                break
            t = time.monotonic()
            if t - self.started_at >= CRASH_WINDOW:
                self.backoff_i = 0
            self.exits.append(t)
            delay = BACKOFF[min(self.backoff_i, len(BACKOFF) - 1)]
            self.backoff_i += 1
            self.restarts += 1
            self._set('crashing' if self._crashing() else 'backoff')
            log_line('berth', '%s exited with code %d; restarting in %d s' % (self.name, code, delay))
            self.wake.wait(delay)
            self.wake.clear()
        self._set('stopped')
        self.gone.set()

    def _once(self):
        try:
            p = subprocess.Popen(['/bin/bash', '-c', self.command], cwd=self.release['dir'], env=self._environment(),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        except OSError as e:
            self.tail.append('could not start: %s' % e)
            log_line('berth', '%s could not start: %s' % (self.name, e))
            return 127
        self.popen, self.pid, self.started_at = p, p.pid, time.monotonic()
        if self.stopping:
            os.killpg(p.pid, signal.SIGTERM)
        if self._crashing():
            self._set('crashing')
        else:
            self._set('starting' if self.port else 'running')
        if self.port or self.state == 'crashing':
            threading.Thread(target=self._watch_up, args=(p,), daemon=True).start()
        pump = threading.Thread(target=self._pump, args=(p,), daemon=True)
        pump.start()
        code = p.wait()
        pump.join(2)
        self.pid = None
        # The group's other members (what the command started) go with it.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        return 128 - code if code < 0 else code

    def _watch_up(self, p):
        """web: running once it answers; a crashing process: running again after 60 s up."""
        while p.poll() is None and not self.stopping:
            if self.port and self.state == 'starting' and answers(self.port, self.release.get('health_path') or '/', 1.0):
                self._set('running')
            if time.monotonic() - self.started_at >= CRASH_WINDOW:
                self.exits.clear()
                if self.state in ('crashing', 'starting'):
                    self._set('running')
                return
            time.sleep(0.2)

    def _pump(self, p):
        for raw in iter(lambda: p.stdout.readline(65536), b''):
            text = raw.decode('utf-8', 'replace').rstrip('\r\n')
            self.tail.append(text)
            log_line(self.name, text)
        p.stdout.close()

    def wait_healthy(self, timeout):
        """For a web candidate: None when it answers, else (error, exit code or None)."""
        path = self.release.get('health_path') or '/'
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.first_exit.is_set():
                return ('the %s process exited with code %s before answering on %d' % (self.name, self.last_exit, self.port), self.last_exit)
            if answers(self.port, path, 1.0):
                return None
            time.sleep(0.05)
        return ('the %s process did not answer on %d within %d s' % (self.name, self.port, timeout), None)

    def output(self):
        return '\n'.join(self.tail)

    def stop(self, grace):
        """SIGTERM to its process group, SIGKILL after grace seconds; returns once it is gone."""
        self.stopping = True
        self.wake.set()
        p = self.popen
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and self._group_alive(p.pid):
                time.sleep(0.02)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
        self.gone.wait(5)

    @staticmethod
    def _group_alive(pgid):
        try:
            os.killpg(pgid, 0)
            return True
        except OSError:
            return False
`
