import { cpus, hostname, totalmem } from 'node:os'

/** What this machine is: its name, memory and CPUs, as a node reports them to the cluster and to Prometheus. */
export interface MachineFacts {
  hostname: string
  memoryBytes: number
  cpus: number
}

/** Reads the machine's facts from the kernel (uname, sysinfo, the CPU list). */
export function machineFacts(): MachineFacts {
  return { hostname: hostname(), memoryBytes: totalmem(), cpus: cpus().length }
}
