/**
 * fastify and prom-client, loaded on first use: they are a large share of the import time. Both
 * are CommonJS, so require gives the instance a user's `import` gets (prom-client's registry too).
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
