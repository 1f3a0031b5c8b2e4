/**
 * The errors faults may make a torture worker's calls fail with. Anything else is a defect the
 * campaign must not retry past. A campaign cannot spend its int32 domain, so
 * `IDGEN_SEQUENCE_EXHAUSTED` is not among them.
 */
export const EXPECTED_ERROR_CODES: readonly string[] = [
  'IDGEN_STORE_UNAVAILABLE',
  'IDGEN_SERIAL_UNAVAILABLE',
  'IDGEN_DEADLINE_EXCEEDED',
  'IDGEN_CONTENTION',
  'IDGEN_CLOSED',
];

/** The longest deadline of its own a concurrent caller's call may have (worker.ts). */
export const OWN_DEADLINE_MS = 100;

/**
 * The library's alarms, rows gone back or broken: a failure unless the commitlog is `periodic`.
 * The worker goes on after them, so that the report can count them.
 */
export const ALARM_CODES: readonly string[] = ['IDGEN_STATE_ROLLED_BACK', 'IDGEN_INVARIANT_BROKEN'];
