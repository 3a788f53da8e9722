import { startLab } from './cluster-lab'

/**
 * Starts a lab and holds it until killed: `bun test/lab/hold-lab.ts NAME`. For poking at a lab by
 * hand (`ip netns exec berthlab-NAME-a ...`, `docker -H unix:///tmp/berthlab-NAME/a/docker.sock ...`),
 * and for the smoke test's killed run (SIGKILL leaves everything behind for the next sweep).
 * Prints one line of JSON once the lab is up.
 */
const lab = await startLab(process.argv[2] ?? 'hold')
console.log(JSON.stringify({ name: lab.name, root: lab.root, A: lab.address('A'), B: lab.address('B'), host: lab.hostAddress('A'), timings: lab.timings }))
setInterval(() => {}, 60_000)
