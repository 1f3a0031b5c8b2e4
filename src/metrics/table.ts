/**
 * Every metric idgen-cass exposes: registered from this table, docs/metrics.md checked against
 * it, and the alert rules and dashboard may name only what it names.
 */

/** One metric as {@link metricsTable} describes it. */
export interface MetricDescription {
  /** The Prometheus name. */
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  /** In the order they are documented. */
  readonly labels: readonly string[];
  /** Also the `# HELP` line. */
  readonly help: string;
}

/** Seconds: from a LOCAL_SERIAL round trip to a refill retried past the default call deadline. */
export const DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
]);

/** Frozen: metricsTable() hands out the table itself. */
function describe(type: MetricDescription['type']) {
  return (name: string, help: string, labels: readonly string[] = ['sequence']) =>
    Object.freeze({ name, type, labels: Object.freeze([...labels]), help });
}
const counter = describe('counter');
const gauge = describe('gauge');
const histogram = describe('histogram');

/** The metrics, in the order docs/metrics.md lists them. */
export const METRICS: readonly MetricDescription[] = Object.freeze([
  counter(
    'idgen_ids_issued_total',
    "IDs handed out by next(), tryNext(), take() and the service's ID requests in this process.",
  ),
  gauge(
    'idgen_ids_held',
    'IDs this process holds and has not handed out (current and preloaded block).',
  ),
  counter(
    'idgen_waits_total',
    'next() and take() calls that found no ID in the process, and service ID requests that found too few, and waited for a refill.',
  ),
  histogram(
    'idgen_wait_duration_seconds',
    'How long the calls that waited for a refill waited, whether they got IDs or failed.',
  ),
  counter(
    'idgen_call_errors_total',
    'Calls that waited for a refill and rejected, by error code (e.g. IDGEN_DEADLINE_EXCEEDED).',
    ['sequence', 'code'],
  ),
  counter(
    'idgen_block_claims_total',
    'Blocks this process claimed from its DC at LOCAL_SERIAL (confirmed claims).',
  ),
  histogram(
    'idgen_block_claim_duration_seconds',
    'How long block claims took, lost races and waits for a DC range included, whether they succeeded or failed.',
  ),
  counter(
    'idgen_dc_grants_total',
    'DC ranges this process got granted at SERIAL (not one found made by an identical batch).',
  ),
  histogram(
    'idgen_dc_grant_duration_seconds',
    'How long DC range requests took (reads, the grant at SERIAL, the install at LOCAL_SERIAL), whether they succeeded or failed.',
  ),
  counter(
    'idgen_cas_rejections_total',
    'Conditional writes whose condition did not hold (races lost to other processes).',
  ),
  counter(
    'idgen_cas_unknown_outcomes_total',
    'Conditional writes that timed out with an unknown outcome (resolved by a re-read).',
  ),
  counter(
    'idgen_errors_total',
    'Failed block claims, DC range requests and give-backs, by error code.',
    ['sequence', 'code'],
  ),
  counter(
    'idgen_ids_wasted_total',
    'IDs this process will never hand out, by cause (unknownOutcome, takeSkipped, notReturned, dropped, refused, undelivered).',
    ['sequence', 'cause'],
  ),
  gauge(
    'idgen_dc_ids_left',
    'IDs a DC holds and has not handed out: the rest of its reserved range plus its preloaded range, as of the last poll. With shards, one series per shard (dc="dc1/6").',
    ['sequence', 'dc'],
  ),
  gauge(
    'idgen_dc_rate_ids_per_second',
    "IDs per second handed to a DC's (or shard's) processes between the last two polls; no series while its rows cannot be read current.",
    ['sequence', 'dc'],
  ),
  gauge(
    'idgen_dc_runway_seconds',
    "Seconds a DC's (or shard's) IDs left last at its rate without a new grant (+Inf at rate 0); no series while its rows cannot be read current (a DC cut off).",
    ['sequence', 'dc'],
  ),
  gauge(
    'idgen_serial_reachable',
    'Whether SERIAL (Paxos over every DC) answered from this DC at the last poll: 1 yes, 0 no.',
    ['dc'],
  ),
  gauge(
    'idgen_dc_unsafe_nodes',
    "Nodes of this process's DC whose settings the durability watch last found unsafe (e.g. commitlog_sync: periodic); above 0, no block is claimed from the DC unless allowUnsafeCluster.",
    ['dc'],
  ),
  counter(
    'idgen_runway_poll_failures_total',
    'Polls whose reads of the rows failed (a failed SERIAL probe shows in idgen_serial_reachable).',
    [],
  ),
]);

/** Every metric idgen-cass registers when given `metrics`, as docs/metrics.md lists them. */
export function metricsTable(): readonly MetricDescription[] {
  return METRICS;
}
