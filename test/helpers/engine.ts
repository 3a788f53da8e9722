/**
 * The Docker engine the end-to-end tests run on: the machine's, unless the test process has
 * BERTH_CONTAINERS_DOCKER_SOCKET set (then every Berth it starts uses that engine too), e.g. a
 * private dockerd for the solo tier that does not disturb the machine's containers.
 */
export const ENGINE_SOCKET = process.env.BERTH_CONTAINERS_DOCKER_SOCKET || '/var/run/docker.sock'
