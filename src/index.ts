/**
 * idgen-cass: unique integer IDs for services in several datacenters, coordinated only through
 * Cassandra lightweight transactions. This file names every public export.
 */
export { connect, IdGen } from './connect.js';
export type { ConnectOptions } from './connect.js';
export type { ConnectionOptions } from './store/cassandra/driver-client.js';
export { initSchema } from './schema.js';
export type { InitSchemaOptions, InitSchemaResult } from './schema.js';
export { Admin, ADMIN_DEFAULTS } from './admin/admin.js';
export type {
  AdminOptions,
  AdminParts,
  CheckOptions,
  CheckResult,
  ProbeOptions,
  StatusOptions,
} from './admin/admin.js';
export { openAdmin, preflight } from './admin/open.js';
export { sequenceStatus } from './admin/status.js';
export type {
  DcStatus,
  HeldRange,
  HostStatus,
  LocalNodeSafety,
  SequenceSnapshot,
  SequenceStatus,
  SerialProbe,
  StatusReport,
} from './admin/status.js';
export { checkSequence, checkVerdict } from './admin/check.js';
export type {
  CheckSnapshot,
  CheckVerdict,
  UnverifiedFact,
  Violation,
  ViolationKind,
} from './admin/check.js';
export { checkNode, MIN_PAXOS_STATE_SECONDS } from './admin/preflight.js';
export type {
  CheckStatus,
  NodeCheck,
  NodePreflight,
  PreflightCheckName,
  PreflightReport,
  PreflightVerdict,
} from './admin/preflight.js';
export { ID_GEN_DEFAULTS } from './allocator/id-gen.js';
export type { SequenceHandleOptions } from './allocator/id-gen.js';
export type { RetiredState, RetireOutcome } from './allocator/retire.js';
export { metricsTable } from './metrics/table.js';
export type { MetricDescription } from './metrics/table.js';
export { METRICS_DEFAULTS } from './metrics/options.js';
export type { MetricsOptions } from './metrics/options.js';
export { Sequence } from './allocator/sequence.js';
export type { SequenceState } from './allocator/sequence.js';
export type { CallOptions } from './allocator/call-deadline.js';
export type { SequenceStats } from './allocator/sequence-stats.js';
export type { IdRange } from './allocator/block.js';
export { createServer } from './serve/server.js';
export { SERVE_DEFAULTS } from './serve/options.js';
export type { MetricsRegistry, ServeOptions } from './serve/options.js';
export type { StatusSource } from './serve/status-page.js';
export type { ServeErrorBody, ServeErrorCode, ServeRefusalCode } from './serve/http-errors.js';
export { SEQUENCE_DEFAULTS } from './settings/defaults.js';
export { DOMAIN_MAX } from './settings/model.js';
export type {
  AlterSequenceOptions,
  CreateSequenceOptions,
  DomainPreset,
} from './settings/model.js';
export type {
  DcState,
  DomainName,
  Grant,
  NodeSettings,
  SequenceSettings,
  TableSettings,
} from './store/port.js';
export {
  AbortedError,
  AuthenticationError,
  ClosedError,
  ContentionError,
  DeadlineError,
  DomainNeedsBigIntError,
  IdGenError,
  InvalidCountError,
  InvalidNameError,
  InvalidOptionError,
  InvariantError,
  SequenceExhaustedError,
  SequenceExistsError,
  SequenceNotFoundError,
  SequenceRecreatedError,
  SerialUnavailableError,
  StateRolledBackError,
  StoreUnavailableError,
  UnsafeClusterError,
} from './errors.js';
export type { IdGenErrorCode, ShownValue } from './errors.js';
