/**
 * The supervisor's web ports (berth/app, issue 39): the slots a web process listens on, the live
 * one kept in the home, and the drain of an old web before it is stopped. Berth's edge connects
 * to the live web's port directly (docs/architecture.md "Apps"). Python, see app-supervisor.ts.
 */

/** /usr/local/lib/berth/berth_ports.py */
export const PORTS_PY = String.raw`"""The web ports of berth-supervise: slots, the live one kept across restarts, and drains."""
import os
import time

# A new web goes on a port no process holds, so a switch never waits for the old web to drain.
SLOTS = tuple(range(3000, 3010))
# The live web's port, kept in the home: a restarted container's web comes back on the port Berth knows.
PORT_FILE = '/home/site/app/.web-port'
# After a switch the old web keeps serving until Berth says retire (its edge moved), at most this.
RETIRE_AFTER = 60
# retire: the old web is stopped once no connection to its port is open, at most after this.
DRAIN_S = 30


def saved():
    """The port the live web listened on before the container (re)started; the first slot if none."""
    try:
        with open(PORT_FILE) as f:
            port = int(f.read().strip())
        return port if port in SLOTS else SLOTS[0]
    except (OSError, ValueError):
        return SLOTS[0]


def save(port):
    tmp = PORT_FILE + '.tmp'
    try:
        with open(tmp, 'w') as f:
            f.write('%d\n' % port)
        os.replace(tmp, PORT_FILE)
    except OSError:
        pass


def established(port):
    """Connections open to port in this container (TCP state 01, ESTABLISHED)."""
    n = 0
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(table) as f:
                for line in f.readlines()[1:]:
                    parts = line.split()
                    if len(parts) > 3 and parts[3] == '01' and int(parts[1].rsplit(':', 1)[1], 16) == port:
                        n += 1
        except (OSError, ValueError, IndexError):
            pass
    return n


def drained(ports, timeout=DRAIN_S):
    """Waits until no connection to any of ports is open (the edge's requests on them finished and
    it closed its kept-alive ones), at most timeout s; True when they drained."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(established(p) for p in ports):
            return True
        time.sleep(0.05)
    return False
`
