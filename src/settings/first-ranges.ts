/**
 * First ranges: the DC ranges a create grants in the write that makes the sequence, so that a
 * fleet starting at once never crowds the grants partition at SERIAL (docs/design.md).
 */

import { InvalidOptionError } from '../errors.js';
import { granteeName, isValidName } from '../names.js';
import type { FirstGrant, SequenceSettings } from '../store/port.js';

/**
 * The most first grants (DCs × shards) one create may write: they are rows of one batch, and
 * Cassandra refuses a batch above `batch_size_fail_threshold` (50 KiB by default).
 */
export const MAX_FIRST_GRANTS = 64;

/**
 * Grant 1 of every shard of every DC in `dcs`, `dcRangeSize` IDs each and contiguous from
 * `start`, in the order given (shards in order within a DC).
 * @throws {InvalidOptionError} for a DC name that is not one, a DC named twice, more than
 *   {@link MAX_FIRST_GRANTS} ranges, or ranges that do not fit the domain from `start`.
 */
export function resolveFirstGrants(
  settings: SequenceSettings,
  dcs: readonly string[] | undefined,
): FirstGrant[] {
  if (dcs === undefined) return [];
  const allowed = 'a list of distinct datacenter names (letters, digits, "_", "-", ".")';
  if (!Array.isArray(dcs)) throw new InvalidOptionError('firstRanges', dcs, allowed);
  const list: readonly unknown[] = dcs;
  if (list.some((dc) => !isValidName('datacenter', dc)) || new Set(list).size !== list.length) {
    throw new InvalidOptionError('firstRanges', dcs, allowed);
  }
  const { count, total, room } = firstRangeSpace(settings, dcs.length);
  if (count > MAX_FIRST_GRANTS) {
    throw new InvalidOptionError(
      'firstRanges',
      dcs,
      `DCs whose first ranges number at most ${MAX_FIRST_GRANTS} (DCs × shards; they are one batch): ${dcs.length} DC(s) × ${settings.shards} shard(s) = ${count}; create with fewer shards and raise them with alterSequence() (later shards ask for their first range when they start)`,
    );
  }
  if (total > room) {
    throw new InvalidOptionError(
      'firstRanges',
      dcs,
      `DCs whose first ranges fit the domain: ${dcs.length} DC(s) × ${settings.shards} shard(s) × dcRangeSize ${settings.dcRangeSize} = ${total} IDs, but only ${room} lie from start ${settings.start} to max ${settings.max}; list fewer DCs or lower dcRangeSize`,
    );
  }
  const grants: FirstGrant[] = [];
  let next = settings.start;
  for (const dc of dcs) {
    for (let shard = 0; shard < settings.shards; shard++) {
      const grant = { number: 1, min: next, max: next + settings.dcRangeSize - 1n };
      grants.push({ grantee: granteeName(dc, shard), grant });
      next = grant.max + 1n;
    }
  }
  return grants;
}

/**
 * Refuses first ranges for a DC the keyspace does not replicate to, when its replication is
 * known (NetworkTopologyStrategy): no process there could claim at LOCAL_SERIAL, so its ranges
 * would be lost from the domain, and a misspelt DC would lose them without a word.
 * @throws {InvalidOptionError} (option `firstRanges`) naming the DCs outside the replication.
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
 * The DCs a create grants first ranges to when it names none: with adaptive blocks, every DC the
 * keyspace replicates to (docs/sizing.md, "The defaults: 16 shards and first ranges"); none if
 * any name is unusable or the ranges would not fit one batch or an eighth of the IDs left.
 */
export function defaultFirstRanges(
  settings: SequenceSettings,
  replicaDcs: readonly string[] | undefined,
): readonly string[] | undefined {
  if (settings.maxBlockSize === settings.blockSize) return undefined;
  if (replicaDcs === undefined || replicaDcs.length === 0) return undefined;
  // A name the protocol cannot use (the snitch allows more than our names do): the create goes
  // on without first ranges rather than failing on a list the user never gave.
  if (replicaDcs.some((dc) => !isValidName('datacenter', dc))) return undefined;
  const { count, total, room } = firstRangeSpace(settings, replicaDcs.length);
  return count > MAX_FIRST_GRANTS || total * 8n > room ? undefined : replicaDcs;
}

/** How many first ranges `dcs` DCs take, how many IDs, and how many lie from `start` on. */
function firstRangeSpace(settings: SequenceSettings, dcs: number) {
  const count = dcs * settings.shards;
  const total = BigInt(count) * settings.dcRangeSize;
  return { count, total, room: settings.max - settings.start + 1n };
}
