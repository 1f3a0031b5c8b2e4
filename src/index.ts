/**
 * idgen-cass: unique integer IDs for services in several datacenters, coordinated only through
 * Cassandra lightweight transactions. This file names every public export.
 */
export { connect } from './client.js';
export type { ConnectOptions } from './client.js';
export type { ConnectionOptions } from './connection.js';
export { initSchema } from './schema.js';
export type { InitSchemaOptions, InitSchemaResult } from './schema.js';
export { Admin, ADMIN_DEFAULTS, checkSequence, openAdmin, sequenceStatus } from './admin.js';
export type {
  AdminOptions,
  CheckOptions,
  CheckResult,
  DcStatus,
  HeldRange,
  HostStatus,
  SequenceSnapshot,
  SequenceStatus,
  SerialProbe,
  StatusOptions,
  StatusReport,
  Violation,
  ViolationKind,
} from './admin.js';
export { IdGen, ID_GEN_DEFAULTS } from './allocator/id-gen.js';
export type { SequenceHandleOptions } from './allocator/id-gen.js';
export { Sequence } from './allocator/sequence.js';
export type { CallOptions, SequenceState, SequenceStats } from './allocator/sequence.js';
export type { IdRange } from './allocator/block.js';
export { DOMAIN_MAX, SEQUENCE_DEFAULTS } from './options.js';
export type { AlterSequenceOptions, CreateSequenceOptions, DomainPreset } from './options.js';
export type { DcState, DomainName, Grant, SequenceSettings } from './store/port.js';
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
  SerialUnavailableError,
  StateRolledBackError,
  StoreUnavailableError,
  UnsafeClusterError,
} from './errors.js';
export type { IdGenErrorCode } from './errors.js';
