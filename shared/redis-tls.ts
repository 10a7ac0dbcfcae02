// Every Redis client of every process (BullMQ queues and workers, the API's limiter and cache, the pump's probe)
// takes its TLS settings from here, so `REDIS_URL=rediss://…` is honoured everywhere.

/** `rediss://` means TLS (the server's name checked against its certificate); `redis://` plain TCP. */
export const redisTls = (url: string): { tls?: { servername?: string } } => {
  const u = new URL(url);
  if (u.protocol !== 'rediss:') return {};
  const host = u.hostname.replace(/^\[|\]$/g, '');
  // SNI takes a host name, never an IP address.
  return { tls: /^[\d.]+$|:/.test(host) ? {} : { servername: host } };
};
