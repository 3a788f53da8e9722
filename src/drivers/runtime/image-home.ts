/**
 * The first lines of each site image's start script (image-static.ts, image-php.ts), run as the
 * site user (uid 1000, who owns /home/site) before any server opens a file there. The servers
 * log into ~/logs and refuse to start when they cannot open their log: a home whose `logs` is a
 * symbolic link (dangling in the container, or pointing anywhere), or a file, used to make the
 * container exit at once and restart forever, and its owner could not repair it (the files API
 * refuses links; exec needs a running container). Such a `logs`, and a log file of the servers
 * that is a link, is moved aside (renamed to `{name}.moved-aside-{UTC time}`, the link itself,
 * never followed) and a real folder made, so the site starts; the owner finds the old entry
 * beside it. `.ssh` gets the same before sshd starts (image-php.ts's `aside_unless_dir .ssh`).
 * POSIX sh: busybox's and bash.
 */
export function homeRepair(logFiles: readonly string[]): string {
  return `# ~/logs (and a server's log in it) that is a link, or not a folder, is moved aside, never
# followed, so that the servers can open their logs and the site starts.
aside() { mv -f "$1" "$1.moved-aside-$(date -u +%Y%m%d%H%M%S)"; }
aside_unless_dir() { if [ -L "/home/site/$1" ] || { [ -e "/home/site/$1" ] && [ ! -d "/home/site/$1" ]; }; then aside "/home/site/$1"; fi; }
aside_unless_dir logs
mkdir -p /home/site/public /home/site/logs
for f in ${logFiles.join(' ')}; do if [ -L "/home/site/logs/$f" ]; then aside "/home/site/logs/$f"; fi; done
`
}

/**
 * A start script's line logger: what a server writes to `fifo` (its stderr) is appended to
 * `file` one line at a time, the file opened by name for each line and closed after it, so a
 * log renamed by the rotation (domain/logs/rotation.ts) is followed at the next line, with none
 * lost and no signal needed (a server whose stderr were the file itself would write into the
 * rotated file forever). `awk` is the image's (busybox's, or `mawk -W interactive`, which reads a
 * pipe line by line). An awk that fails (the file cannot be opened) is started again a second
 * later on the same pipe, so the server never meets a closed pipe; at the end of its input (the
 * server exited) the loop ends. Runs in the background; the server then writes to `fifo`.
 */
export function lineLogger(awk: string, fifo: string, file: string): string {
  return `[ -p ${fifo} ] || mkfifo -m 600 ${fifo}
until ${awk} '{ print >> "${file}"; close("${file}") }'; do sleep 1; done < ${fifo} &
`
}
