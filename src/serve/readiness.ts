/**
 * Health and readiness: `GET /healthz` (200 while the process runs) and `GET /readyz` (200 while
 * this process can hand out IDs in its DC, else 503). Neither requires the bearer token.
 */

import type { FastifyInstance } from 'fastify';

import type { IdGen } from '../allocator/id-gen.js';
import { StoreUnavailableError } from '../errors.js';
import { settleWithin, TIMED_OUT } from '../timers.js';
import { httpErrorOf, type ServeErrorBody } from './http-errors.js';
import { READYZ_QUERY } from './openapi.js';
import type { ServedSequences } from './served-sequences.js';

/** One entry of `/readyz`'s `sequences`. */
type SequenceReadiness =
  | { readonly sequence: string; readonly ready: true; readonly held: number }
  | ({ readonly sequence: string; readonly ready: false } & ServeErrorBody);

/**
 * The body of `/readyz`. `degraded`: some sequences served cannot get IDs here (e.g. one whose DC
 * ranges ran out while the DC is cut off) but others can, so the process still serves: 200.
 */
interface Readiness {
  readonly status: 'ready' | 'degraded' | 'not_ready';
  readonly dc: string;
  readonly keyspace: string;
  readonly sequences: readonly SequenceReadiness[];
  readonly code?: string;
  readonly message?: string;
}

/** Registers `/healthz` and `/readyz` on `app`; `/readyz` waits `readyTimeoutMs` per check. */
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

/**
 * What `/readyz` answers. Ready means this process can hand out IDs from what its DC holds, which
 * a partition between DCs alone does not change: Cassandra answers in the local DC, and every
 * sequence served (`ready`), or some of them (`degraded`), holds IDs here. `not_ready` when the
 * sequences cannot be listed, or none served holds IDs. With `only`, that one sequence decides.
 */
async function readiness(
  ids: IdGen,
  served: ServedSequences,
  timeoutMs: number,
  only: string | undefined,
): Promise<Readiness> {
  const base = { dc: ids.dc, keyspace: ids.keyspace };
  let names: readonly string[];
  try {
    // One read at LOCAL_QUORUM even with an allowlist: readiness means Cassandra answers here.
    const listed = await within(timeoutMs, ids.listSequences(), 'listing the sequences');
    names = only !== undefined ? [only] : (served.allowlist ?? listed.map((s) => s.name));
  } catch (error) {
    return { status: 'not_ready', ...base, sequences: [], ...httpErrorOf(error).body };
  }
  const sequences = await Promise.all(
    names.map(async (sequence): Promise<SequenceReadiness> => {
      try {
        return { sequence, ready: true, held: await served.ready(sequence, timeoutMs) };
      } catch (error) {
        return { sequence, ready: false, ...httpErrorOf(error).body };
      }
    }),
  );
  const status = sequences.every((s) => s.ready)
    ? 'ready'
    : sequences.some((s) => s.ready)
      ? 'degraded'
      : 'not_ready';
  return { status, ...base, sequences };
}

/** `promise`, or {@link StoreUnavailableError} once `timeoutMs` pass first. */
async function within<T>(timeoutMs: number, promise: Promise<T>, operation: string): Promise<T> {
  try {
    const outcome = await settleWithin(promise, timeoutMs);
    if (outcome === TIMED_OUT) {
      throw new StoreUnavailableError('local', operation, `no answer within ${timeoutMs} ms`);
    }
    return outcome;
  } finally {
    promise.catch(() => undefined);
  }
}
