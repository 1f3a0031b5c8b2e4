/** First ranges, granted by the create itself: a fleet starting at once never crowds SERIAL. */

import { InvalidOptionError } from '../errors.js';
import { granteeName, isValidName } from '../names.js';
import type { FirstGrant, SequenceSettings } from '../store/port.js';

/** DCs × shards: rows of one batch, under Cassandra's batch size limit. */
export const MAX_FIRST_GRANTS = 64;

/**
 * Grant 1 of every shard of every DC in `dcs`, `dcRangeSize` IDs each, contiguous from `start`.
 * @throws {InvalidOptionError} for a bad or repeated DC name, or ranges too many or too large.
 */
export function resolveFirstGrants(
  settings: SequenceSettings,
  dcs: readonly string[] | undefined,
): FirstGrant[] {
  if (dcs === undefined) return [];
  const list: unknown = dcs;
  if (
    !Array.isArray(list) ||
    list.some((dc) => !isValidName('datacenter', dc)) ||
    new Set(list).size !== list.length
  ) {
    const allowed = 'a list of distinct datacenter names (letters, digits, "_", "-", ".")';
    throw new InvalidOptionError('firstRanges', dcs, allowed);
  }
  const { count, total, room } = firstRangeSpace(settings, dcs.length);
  const asked = `${dcs.length} DC(s) × ${settings.shards} shard(s)`;
  if (count > MAX_FIRST_GRANTS) {
    throw new InvalidOptionError(
      'firstRanges',
      dcs,
      `DCs whose first ranges number at most ${MAX_FIRST_GRANTS} (DCs × shards; they are one batch): ${asked} = ${count}; create with fewer shards and raise them with alterSequence() (later shards ask for their first range when they start)`,
    );
  }
  if (total > room) {
    throw new InvalidOptionError(
      'firstRanges',
      dcs,
      `DCs whose first ranges fit the domain: ${asked} × dcRangeSize ${settings.dcRangeSize} = ${total} IDs, but only ${room} lie from start ${settings.start} to max ${settings.max}; list fewer DCs or lower dcRangeSize`,
    );
  }
  let next = settings.start;
  return dcs.flatMap((dc) =>
    Array.from({ length: settings.shards }, (_, shard) => {
      const grant = { number: 1, min: next, max: next + settings.dcRangeSize - 1n };
      next = grant.max + 1n;
      return { grantee: granteeName(dc, shard), grant };
    }),
  );
}

/**
 * No process in a DC the keyspace does not replicate to could claim at LOCAL_SERIAL: its ranges
 * would be lost without a word.
 * @throws {InvalidOptionError} (`firstRanges`) naming those DCs.
 */
export function checkFirstRangeDcs(
  dcs: readonly string[],
  replicaDcs: readonly string[] | undefined,
): void {
  if (replicaDcs === undefined) return;
  const outside = dcs.filter((dc) => !replicaDcs.includes(dc));
  if (outside.length === 0) return;
  throw new InvalidOptionError(
    'firstRanges',
    dcs,
    `DCs the keyspace replicates to: ${replicaDcs.join(', ')} (not ${outside.join(', ')}); add a DC to the keyspace's replication before granting it first ranges, or leave it out: its first process then asks SERIAL for its first range`,
  );
}

/**
 * When a create names none (docs/sizing.md): with adaptive blocks, every DC the keyspace
 * replicates to, unless a name is unusable or the ranges would not fit one batch or an eighth of
 * the IDs left.
 */
export function defaultFirstRanges(
  settings: SequenceSettings,
  replicaDcs: readonly string[] | undefined,
): readonly string[] | undefined {
  if (settings.maxBlockSize === settings.blockSize || replicaDcs === undefined) return undefined;
  if (replicaDcs.length === 0 || !replicaDcs.every((dc) => isValidName('datacenter', dc))) {
    return undefined;
  }
  const { count, total, room } = firstRangeSpace(settings, replicaDcs.length);
  return count > MAX_FIRST_GRANTS || total * 8n > room ? undefined : replicaDcs;
}

function firstRangeSpace(settings: SequenceSettings, dcs: number) {
  const count = dcs * settings.shards;
  const total = BigInt(count) * settings.dcRangeSize;
  return { count, total, room: settings.max - settings.start + 1n };
}
