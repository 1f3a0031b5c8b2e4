/** `GET /healthz` (200 while the process runs) and `GET /readyz` (whether it can hand out IDs). */

import type { FastifyInstance } from 'fastify';

import type { IdGen } from '../allocator/id-gen.js';
import { StoreUnavailableError } from '../errors.js';
import { settleWithin, TIMED_OUT } from '../timers.js';
import { httpErrorOf } from './http-errors.js';
import { READYZ_QUERY } from './openapi.js';
import type { ServedSequences } from './served-sequences.js';

/** `/readyz` waits `readyTimeoutMs` for each of its checks. */
export function registerHealthRoutes(
  app: FastifyInstance,
  ids: IdGen,
  served: ServedSequences,
  readyTimeoutMs: number,
): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get<{ Querystring: { sequence?: string } }>(
    '/readyz',
    { schema: { querystring: READYZ_QUERY } },
    async (request, reply) => {
      const report = await readiness(ids, served, readyTimeoutMs, request.query.sequence);
      return reply.code(report.status === 'not_ready' ? 503 : 200).send(report);
    },
  );
}

/** The `/readyz` report; its rules are those the OpenAPI document states. */
async function readiness(
  ids: IdGen,
  served: ServedSequences,
  timeoutMs: number,
  only: string | undefined,
) {
  const base = { dc: ids.dc, keyspace: ids.keyspace };
  let names: readonly string[];
  try {
    // One read at LOCAL_QUORUM even with an allowlist: readiness means Cassandra answers here.
    const listing = ids.listSequences();
    listing.catch(() => undefined);
    const listed = await settleWithin(listing, timeoutMs);
    if (listed === TIMED_OUT) {
      const why = `no answer within ${timeoutMs} ms`;
      throw new StoreUnavailableError('local', 'listing the sequences', why);
    }
    names = only !== undefined ? [only] : (served.allowlist ?? listed.map((s) => s.name));
  } catch (error) {
    return { status: 'not_ready', ...base, sequences: [], ...httpErrorOf(error).body };
  }
  const sequences = await Promise.all(
    names.map(async (sequence) => {
      try {
        // Claims a block unless this process holds IDs of the sequence.
        const handle = (await served.handle(sequence)).sequence;
        await handle.ready({ timeoutMs });
        return { sequence, ready: true as const, held: handle.stats().remaining };
      } catch (error) {
        return { sequence, ready: false as const, ...httpErrorOf(error).body };
      }
    }),
  );
  const ready = sequences.filter((s) => s.ready).length;
  const status = ready === sequences.length ? 'ready' : ready > 0 ? 'degraded' : 'not_ready';
  return { status, ...base, sequences };
}
