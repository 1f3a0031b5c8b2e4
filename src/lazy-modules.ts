/**
 * fastify and prom-client, loaded on first use: a service that only draws IDs needs neither, and
 * they are a large share of the import time. Both are CommonJS, so a synchronous require gives
 * the same instance a user's own `import` gets (prom-client's default registry included).
 */
import { createRequire } from 'node:module';

import type * as Fastify from 'fastify';
import type * as PromClient from 'prom-client';

const requireFromHere = createRequire(import.meta.url);

let fastifyLoaded: typeof Fastify | undefined;
let promClientLoaded: typeof PromClient | undefined;

export function fastifyModule(): typeof Fastify {
  return (fastifyLoaded ??= requireFromHere('fastify') as typeof Fastify);
}

export function promClientModule(): typeof PromClient {
  return (promClientLoaded ??= requireFromHere('prom-client') as typeof PromClient);
}
