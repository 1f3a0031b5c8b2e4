/**
 * fastify and prom-client, loaded on first use rather than when the package is imported: a
 * service that only draws IDs uses neither (the HTTP service and metrics are opt-in), and loading
 * them took 351 ms and 178 ms of an import that took 1 to 1.4 s (two busy cores). Both are
 * CommonJS packages, so a synchronous require gives the same module instance a user's own
 * `import` of them gets (prom-client's default registry included).
 */
import { createRequire } from 'node:module';

import type * as Fastify from 'fastify';
import type * as PromClient from 'prom-client';

const requireFromHere = createRequire(import.meta.url);

let fastifyLoaded: typeof Fastify | undefined;
let promClientLoaded: typeof PromClient | undefined;

/** The fastify module, loaded the first time it is asked for. */
export function fastifyModule(): typeof Fastify {
  return (fastifyLoaded ??= requireFromHere('fastify') as typeof Fastify);
}

/** The prom-client module, loaded the first time it is asked for. */
export function promClientModule(): typeof PromClient {
  return (promClientLoaded ??= requireFromHere('prom-client') as typeof PromClient);
}
