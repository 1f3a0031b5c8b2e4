/**
 * The errors the library may throw at a torture worker's calls while the nemesis acts. Anything
 * else, another code or an error that is no IdGenError (the worker counts it as `UNKNOWN`), is a
 * defect the campaign must not retry past: the worker stops on it and the campaign fails.
 */

/**
 * What faults make a call fail with, each seen in the committed campaigns: Cassandra unreachable
 * at a DC's own levels (a partition, nodes killed or paused), SERIAL unreachable once a DC's
 * ranges are spent, a call's deadline passed while its refill waited, a refill that lost its
 * compare-and-set races to the DC's other processes too often, and the calls a process makes
 * after it was told to close while drawing. A campaign cannot spend its domain (int32, 2^31 IDs,
 * against a history budget of 300 million), so `IDGEN_SEQUENCE_EXHAUSTED` is not among them.
 */
export const EXPECTED_ERROR_CODES: readonly string[] = [
  'IDGEN_STORE_UNAVAILABLE',
  'IDGEN_SERIAL_UNAVAILABLE',
  'IDGEN_DEADLINE_EXCEEDED',
  'IDGEN_CONTENTION',
  'IDGEN_CLOSED',
];

/**
 * The longest deadline of its own a concurrent caller's call may have (worker.ts): a call that
 * misses it failed by its caller's doing, not a fault's, and is counted apart from the errors.
 */
export const OWN_DEADLINE_MS = 100;

/**
 * The library's alarms, rows gone back or broken: a failure on a cluster that syncs its
 * commitlog before acknowledging, expected with `periodic` (torture.ts, `alarms`). The worker
 * goes on after them, as a service would keep asking, so that the report can count them.
 */
export const ALARM_CODES: readonly string[] = ['IDGEN_STATE_ROLLED_BACK', 'IDGEN_INVARIANT_BROKEN'];
