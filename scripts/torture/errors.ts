/** The errors faults may cause; any other is a defect not to retry past (exhaustion included). */
export const EXPECTED_ERROR_CODES: readonly string[] = [
  'IDGEN_STORE_UNAVAILABLE',
  'IDGEN_SERIAL_UNAVAILABLE',
  'IDGEN_DEADLINE_EXCEEDED',
  'IDGEN_CONTENTION',
  'IDGEN_CLOSED',
];

/** The longest deadline of its own a concurrent caller's call may have (worker.ts). */
export const OWN_DEADLINE_MS = 100;

/** Rows gone back or broken: a failure unless the commitlog is `periodic`; workers go on. */
export const ALARM_CODES: readonly string[] = ['IDGEN_STATE_ROLLED_BACK', 'IDGEN_INVARIANT_BROKEN'];
