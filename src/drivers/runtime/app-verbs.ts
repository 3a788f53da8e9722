/**
 * The programs of berth/app that Berth and git run: berth-supervise (the verbs, and `daemon`),
 * the pre-receive hook of ~/app.git, and berth-env. Python, see app-supervisor.ts.
 */

/** /usr/local/bin/berth-supervise */
export const SUPERVISE_PY = String.raw`#!/usr/bin/python3
"""berth-supervise VERB: the supervisor of berth/app (daemon) and the verbs Berth runs through exec.
Each verb prints one JSON line and exits 0 (ok) or 1 (refused or failed, "error" says why)."""
import json
import os
import re
import select
import socket
import stat
import sys

sys.path.insert(0, '/usr/local/lib/berth')
SOCK = '/tmp/berth/supervise.sock'
PUSH = '/tmp/berth/push'
ID = re.compile(r'^[A-Za-z0-9_-]{1,64}$')
NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
USAGE = 'usage: berth-supervise daemon | env | switch RELEASE_DIR [--timeout S] | retire | status | watch | push-log ID | push-done ID ok|failed MESSAGE'


def answer(out):
    sys.stdout.write(json.dumps(out) + '\n')
    sys.stdout.flush()
    sys.exit(0 if out.get('ok', True) else 1)


def fail(error):
    answer({'ok': False, 'error': error})


def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(SOCK)
    except OSError as e:
        fail('the supervisor is not running (%s): is this an app container, and has it started?' % e.strerror)
    return s


def ask(req):
    s = connect()
    s.sendall((json.dumps(req) + '\n').encode())
    line = s.makefile('rb').readline()
    if not line:
        fail('the supervisor closed the connection without an answer')
    return json.loads(line)


def watch():
    s = connect()
    s.sendall(b'{"verb":"watch"}\n')
    # With a pipe for input (Berth's exec), its end ends the watch; a terminal or /dev/null does not.
    mode = os.fstat(0).st_mode
    inputs = [s, 0] if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) else [s]
    buf = b''
    while True:
        ready, _, _ = select.select(inputs, [], [])
        if 0 in ready and not os.read(0, 4096):
            return 0
        if s in ready:
            chunk = s.recv(65536)
            if not chunk:
                return 0
            buf += chunk
            while b'\n' in buf:
                line, buf = buf.split(b'\n', 1)
                sys.stdout.write(line.decode() + '\n')
                sys.stdout.flush()


def main(argv):
    verb = argv[0] if argv else ''
    if verb == 'daemon':
        from berth_daemon import Daemon
        Daemon().run()
        return 0
    if verb == 'status':
        answer(ask({'verb': 'status'}))
    if verb == 'retire':
        answer(ask({'verb': 'retire'}))
    if verb == 'env':
        try:
            env = json.loads(sys.stdin.read() or 'null')
        except ValueError as e:
            fail('the input is not JSON (%s): give an object of NAME -> value' % e)
        if not isinstance(env, dict) or not all(isinstance(v, str) and NAME.match(k) for k, v in env.items()):
            fail('give an object of NAME -> string value, names of letters, digits and _ not starting with a digit')
        answer(ask({'verb': 'env', 'env': env}))
    if verb == 'switch' and len(argv) in (2, 4):
        timeout = 60.0
        if len(argv) == 4:
            if argv[2] != '--timeout':
                fail(USAGE)
            try:
                timeout = float(argv[3])
            except ValueError:
                fail('--timeout takes seconds, e.g. --timeout 60')
        answer(ask({'verb': 'switch', 'dir': argv[1], 'timeout': timeout}))
    if verb == 'watch':
        return watch()
    if verb in ('push-log', 'push-done') and len(argv) >= 2:
        if not ID.match(argv[1]):
            fail('the push id is letters, digits, _ and - only')
        os.makedirs(PUSH, exist_ok=True)
        if verb == 'push-log':
            with open('%s/%s.log' % (PUSH, argv[1]), 'ab') as f:
                for chunk in iter(lambda: sys.stdin.buffer.read(65536), b''):
                    f.write(chunk)
            answer({'ok': True})
        if len(argv) < 3 or argv[2] not in ('ok', 'failed'):
            fail(USAGE)
        done = {'ok': argv[2] == 'ok', 'message': ' '.join(argv[3:])}
        tmp = '%s/%s.done.tmp' % (PUSH, argv[1])
        with open(tmp, 'w') as f:
            json.dump(done, f)
        os.replace(tmp, '%s/%s.done' % (PUSH, argv[1]))
        try:
            ask({'verb': 'push-done', 'id': argv[1]})
        except SystemExit:
            pass
        answer({'ok': True})
    fail(USAGE)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
`

/** /usr/local/lib/berth/pre-receive (~/app.git/hooks/pre-receive links to it) */
export const PRE_RECEIVE_PY = String.raw`#!/usr/bin/python3
"""pre-receive of ~/app.git in berth/app: the pushed branch's tree to ~/app/incoming/{id}, the
supervisor told (Berth hears a push event), then Berth's progress printed until it is done."""
import json
import os
import secrets
import socket
import subprocess
import sys
import time

INCOMING = '/home/site/app/incoming'
PUSH = '/tmp/berth/push'
GIVE_UP_S = 30 * 60
ZERO = '0' * 40


def say(text):
    sys.stdout.write(text)
    sys.stdout.flush()


def wait_seconds():
    """How long the push waits for Berth: 30 minutes, or less when the repository's config says
    (git config berth.pushWaitSeconds N, 1 to 1800)."""
    got = subprocess.run(['git', 'config', '--get', 'berth.pushWaitSeconds'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        return max(1, min(GIVE_UP_S, int(got.stdout.decode().strip())))
    except ValueError:
        return GIVE_UP_S


def main():
    pushed = None
    for line in sys.stdin:
        parts = line.split()
        if len(parts) == 3 and parts[2].startswith('refs/heads/') and parts[1] != ZERO:
            pushed = pushed or parts
    if pushed is None:
        return 0  # a deleted branch or a tag: taken, nothing deployed
    _, commit, ref = pushed
    pid = 'psh_' + secrets.token_hex(8)
    folder = os.path.join(INCOMING, pid)
    os.makedirs(folder)
    archive = subprocess.Popen(['git', 'archive', '--format=tar', commit], stdout=subprocess.PIPE)
    untar = subprocess.run(['tar', '-x', '-C', folder], stdin=archive.stdout)
    archive.stdout.close()
    if archive.wait() != 0 or untar.returncode != 0:
        say('berth: could not unpack %s; nothing was deployed\n' % commit)
        return 1
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect('/tmp/berth/supervise.sock')
        s.sendall((json.dumps({'verb': 'push', 'id': pid, 'ref': ref, 'commit': commit, 'dir': folder}) + '\n').encode())
        s.makefile('rb').readline()
        s.close()
    except OSError as e:
        say('berth: the site\'s supervisor is not running (%s); nothing was deployed\n' % e.strerror)
        return 1
    say('berth: deploying %s (%s) as push %s\n' % (commit[:12], ref, pid))
    give_up = wait_seconds()
    log, done = os.path.join(PUSH, pid + '.log'), os.path.join(PUSH, pid + '.done')
    at, started = 0, time.monotonic()
    while True:
        finished = os.path.exists(done)
        try:
            with open(log, 'rb') as f:
                f.seek(at)
                chunk = f.read()
                at += len(chunk)
                if chunk:
                    sys.stdout.buffer.write(chunk)
                    sys.stdout.flush()
        except OSError:
            pass
        if finished:
            with open(done) as f:
                result = json.load(f)
            if result.get('message'):
                say(result['message'].rstrip('\n') + '\n')
            subprocess.run(['rm', '-rf', '--one-file-system', folder])
            return 0 if result.get('ok') else 1
        if time.monotonic() - started > give_up:
            # Told it failed, so it must never deploy later: its tree is renamed away (atomic,
            # as Berth's own move of it into a release), the supervisor forgets it (no replay to
            # Berth's next watch). When Berth moved it first, its deployment has begun and goes on.
            try:
                os.rename(folder, folder + '.gone')
                taken = False
            except FileNotFoundError:
                taken = True
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect('/tmp/berth/supervise.sock')
                s.sendall((json.dumps({'verb': 'push-abandon', 'id': pid}) + '\n').encode())
                s.makefile('rb').readline()
                s.close()
            except OSError:
                pass
            if taken:
                say('berth: no result after %d seconds; its deployment had begun and goes on. See the site\'s deployments in the API.\n' % give_up)
            else:
                subprocess.run(['rm', '-rf', '--one-file-system', folder + '.gone'])
                say('berth: no result after %d seconds; the push was not deployed and will not be. See the site\'s deployments in the API, then push again.\n' % give_up)
            return 1
        time.sleep(0.2)


if __name__ == '__main__':
    sys.exit(main())
`

/** /usr/local/bin/berth-env */
export const BERTH_ENV_PY = String.raw`#!/usr/bin/python3
"""berth-env ARGV...: runs ARGV with the site's variables (/tmp/berth/env.json) added; no ARGV: a login shell."""
import json
import os
import sys

env = dict(os.environ)
try:
    with open('/tmp/berth/env.json') as f:
        env.update({k: v for k, v in json.load(f).items() if isinstance(v, str)})
except (OSError, ValueError, AttributeError):
    pass
argv = sys.argv[1:] or ['/bin/bash', '-l']
try:
    os.execvpe(argv[0], argv, env)
except OSError as e:
    sys.stderr.write('berth-env: %s: %s\n' % (argv[0], e.strerror))
    sys.exit(127 if isinstance(e, FileNotFoundError) else 126)
`
