/** A joining node's certificate request that Berth does not sign: not a PKCS#10 request, another key type, or a bad signature. */
export class InvalidCsrError extends Error {}
