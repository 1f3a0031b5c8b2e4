/**
 * Preflight, pure: each node's settings against what the cluster must guarantee for no ID to be
 * handed out twice (docs/design.md); each check's risk and source: docs/operations.md.
 */

import { ascending } from '../order.js';
import type { NodeSettings } from '../store/port.js';

/** Cassandra's floor for keeping Paxos state (`SystemKeyspace.legacyPaxosTtlSec`). */
export const MIN_PAXOS_STATE_SECONDS = 3 * 3600;

/** `unsafe` fails the preflight; `unknown` (not read) leaves it incomplete; the rest inform. */
export type CheckStatus = 'ok' | 'info' | 'warning' | 'unsafe' | 'unknown';

export interface NodeCheck {
  readonly check: PreflightCheckName;
  readonly status: CheckStatus;
  /** As the node reports it (e.g. `periodic`). */
  readonly value: string | undefined;
  /** What was found and, unless ok, why it matters and what to set. */
  readonly message: string;
}

export interface NodePreflight {
  /** `address:port` */
  readonly host: string;
  readonly dc: string;
  readonly version: string | undefined;
  /** False if the settings could not be read (`error`); `checks` is then empty. */
  readonly checked: boolean;
  readonly error: string | undefined;
  readonly checks: readonly NodeCheck[];
}

/** `incomplete`: nothing unsafe seen, but some nodes or settings could not be read. */
export type PreflightVerdict = 'safe' | 'unsafe' | 'incomplete';

/** What `Admin.preflight` found from DC `dc`; `nodes` sorted by DC and address. */
export interface PreflightReport {
  readonly keyspace: string;
  readonly dc: string;
  readonly at: Date;
  readonly nodes: readonly NodePreflight[];
  readonly verdict: PreflightVerdict;
  /** What is unsafe, one line per check and value, naming the nodes. */
  readonly problems: readonly string[];
  /** What could not be checked, one line per cause. */
  readonly unchecked: readonly string[];
}

type DcRead =
  | { readonly dc: string; readonly nodes: readonly NodeSettings[] }
  | { readonly dc: string; readonly error: string };

const SERIAL_READS_PROPERTY = 'cassandra.unsafe.disable-serial-reads-linearizability';
const IGNORE_REPLAY_ERRORS_PROPERTY = 'cassandra.commitlog.ignorereplayerrors';
const IDGEN_TABLES = ['idgen_grants', 'idgen_dc_state'] as const;

function idgenTables(node: NodeSettings) {
  return IDGEN_TABLES.flatMap((table) => {
    const settings = node.tables.get(table);
    return settings === undefined ? [] : [{ table, ...settings }];
  });
}

type Found = Omit<NodeCheck, 'check'>;

function found(value: string | undefined) {
  return (status: CheckStatus, message: string): Found => ({ status, value, message });
}

/** Each check in order: the setting as operators look it up, its risk and fix, and the check. */
const CHECKS = {
  'commitlog-sync': {
    setting: 'commitlog_sync',
    why: 'acknowledges writes before syncing them, so a crash loses acknowledged writes and Paxos state; set commitlog_sync: batch (or group)',
    run: (node, why) => {
      const value = node.commitlogSync;
      const outcome = found(value);
      switch (value) {
        case 'batch':
          return outcome('ok', 'batch: every write is synced before it is acknowledged');
        case 'group': {
          const window = node.settings.get('commitlog_sync_group_window');
          return outcome(
            'ok',
            `group${window === undefined ? '' : ` (window ${window})`}: writes are synced in groups before they are acknowledged`,
          );
        }
        case 'periodic': {
          const period = node.settings.get('commitlog_sync_period') ?? '10000ms';
          return outcome('unsafe', `periodic (every ${period}): ${why}, up to ${period} of them`);
        }
        case undefined:
          return outcome('unknown', 'not reported by system_views.settings');
        default:
          return outcome('unknown', `unknown value "${value}"; expected batch, group or periodic`);
      }
    },
  },
  'commit-failure-policy': {
    setting: 'commit_failure_policy',
    why: 'keeps acknowledging writes after a failed commitlog sync; set commit_failure_policy: stop',
    run: (node, why) => {
      const value = node.settings.get('commit_failure_policy');
      const outcome = found(value);
      if (value === 'ignore') return outcome('unsafe', `ignore: ${why}`);
      if (value === undefined) return outcome('info', 'not reported (Cassandra defaults to stop)');
      return outcome('ok', value);
    },
  },
  'paxos-variant': {
    setting: 'paxos_variant',
    why: 'SERIAL reads are not linearizable (CASSANDRA-12126); set paxos_variant: v2 (or v1)',
    run: (node, why) => {
      const value = node.paxosVariant;
      const outcome = found(value);
      if (value?.includes('without_linearizable') === true) {
        return outcome('unsafe', `${value}: ${why}`);
      }
      if (value === undefined) {
        return outcome('info', 'not reported (Cassandra before 4.1 has only v1)');
      }
      if (value !== 'v1') return outcome('info', value);
      return outcome('info', 'v1 (about 4 round trips per conditional write; v2 needs 2)');
    },
  },
  'serial-reads-linearizability': {
    setting: `-D${SERIAL_READS_PROPERTY}`,
    why: 'SERIAL reads are not linearizable (CASSANDRA-12126); remove the JVM property',
    run: (node, why) => {
      const value = node.properties.get(SERIAL_READS_PROPERTY);
      const outcome = found(value);
      // As Java's Boolean.parseBoolean reads it. Cassandra 5.0 ignores the property.
      if (value?.toLowerCase() !== 'true') {
        return outcome('ok', `-D${SERIAL_READS_PROPERTY} not set`);
      }
      if (Number.parseInt(node.version ?? '', 10) >= 5) {
        return outcome(
          'warning',
          `-D${SERIAL_READS_PROPERTY}=true is set but ignored by Cassandra ${node.version} (the paxos_variant setting replaced it); remove it`,
        );
      }
      return outcome('unsafe', `-D${SERIAL_READS_PROPERTY}=true: ${why}`);
    },
  },
  'paxos-state-lifetime': {
    setting: 'paxos_state_purging',
    why: `Paxos state can be forgotten before its round is committed; keep gc_grace_seconds of the idgen tables at ${MIN_PAXOS_STATE_SECONDS} or more`,
    run: (node, why) => {
      // `legacy` keeps state max(3 h, gc_grace_seconds); `gc_grace` has no floor. Before 4.1: legacy.
      const purging = node.settings.get('paxos_state_purging') ?? 'legacy';
      const outcome = found(purging);
      if (purging === 'repaired') {
        return outcome('ok', 'repaired: Paxos state is purged only after paxos repair');
      }
      if (purging !== 'legacy' && purging !== 'gc_grace') {
        return outcome('unknown', `unknown paxos_state_purging "${purging}"`);
      }
      const tables = idgenTables(node);
      if (tables.length === 0) {
        return outcome(
          'info',
          `${purging}; the idgen tables do not exist yet (created with gc_grace_seconds 864000)`,
        );
      }
      const lifetime = ({ gcGraceSeconds }: { gcGraceSeconds: number }) =>
        purging === 'legacy' ? Math.max(MIN_PAXOS_STATE_SECONDS, gcGraceSeconds) : gcGraceSeconds;
      const short = tables.filter((table) => lifetime(table) < MIN_PAXOS_STATE_SECONDS);
      const kept = tables.map((table) => `${table.table} ${lifetime(table)} s`).join(', ');
      if (short.length === 0) return outcome('ok', `${purging}: Paxos state kept ${kept}`);
      const low = short.map(({ table, gcGraceSeconds }) => `${table} ${gcGraceSeconds}`).join(', ');
      return found(`gc_grace (gc_grace_seconds: ${low})`)(
        'unsafe',
        `gc_grace with gc_grace_seconds ${low}: ${why} (ALTER TABLE … WITH gc_grace_seconds = 864000)`,
      );
    },
  },
  'table-ttl': {
    setting: 'default_time_to_live of the idgen tables',
    why: 'rows of the idgen tables expire, and a sequence or DC state that expired starts over from IDs already handed out; set default_time_to_live to 0',
    run: (node, why) => {
      const tables = idgenTables(node);
      if (tables.length === 0) {
        return found(undefined)('info', 'the idgen tables do not exist yet (created with no TTL)');
      }
      const expiring = tables.filter(({ defaultTtlSeconds }) => defaultTtlSeconds > 0);
      if (expiring.length === 0) {
        const names = tables.map(({ table }) => table).join(', ');
        return found('0')('ok', `no default TTL on ${names}`);
      }
      const ttls = expiring.map(({ table, defaultTtlSeconds }) => `${table} ${defaultTtlSeconds}`);
      return found(ttls.join(', '))(
        'unsafe',
        `default_time_to_live ${ttls.join(', ')}: ${why} (ALTER TABLE … WITH default_time_to_live = 0)`,
      );
    },
  },
  'paxos-repair': {
    setting: 'paxos_repair_enabled / skip_paxos_repair_on_topology_change',
    why: 'Paxos v2 is not linearizable across topology changes without paxos repair; do not add, remove or move nodes while it is off',
    run: (node, why) => {
      const enabled = node.settings.get('paxos_repair_enabled');
      const skipped = node.settings.get('skip_paxos_repair_on_topology_change');
      const outcome = found(`${enabled ?? '?'}/${skipped ?? '?'}`);
      if (node.paxosVariant !== 'v2') return outcome('ok', 'not used by Paxos v1');
      if (enabled === 'false' || skipped === 'true') {
        return outcome(
          'warning',
          `paxos_repair_enabled ${enabled ?? '?'}, skip_paxos_repair_on_topology_change ${skipped ?? '?'}: ${why}`,
        );
      }
      return outcome(
        'ok',
        'paxos repair runs on topology changes, which keeps Paxos v2 linearizable across them',
      );
    },
  },
  'commitlog-replay': {
    setting: `-D${IGNORE_REPLAY_ERRORS_PROPERTY}`,
    why: 'damaged commitlog segments are skipped at replay, losing acknowledged writes; remove the JVM property',
    run: (node, why) => {
      const value = node.properties.get(IGNORE_REPLAY_ERRORS_PROPERTY);
      const outcome = found(value);
      if (value?.toLowerCase() !== 'true') return outcome('ok', 'replay stops on errors');
      return outcome('warning', `-D${IGNORE_REPLAY_ERRORS_PROPERTY}=true: ${why}`);
    },
  },
} as const satisfies Record<
  string,
  { setting: string; why: string; run: (node: NodeSettings, why: string) => Found }
>;

/** In the order they are made. */
export type PreflightCheckName = keyof typeof CHECKS;

/** Every check on one node's settings, in a fixed order. */
export function checkNode(node: NodeSettings): NodeCheck[] {
  return Object.entries(CHECKS).map(([check, { why, run }]) => ({
    check: check as PreflightCheckName,
    ...run(node, why),
  }));
}

/** The report from what was read of each DC; a node of `hosts` not read counts as unchecked. */
export function preflightReport(
  input: Pick<PreflightReport, 'keyspace' | 'dc' | 'at'> & {
    readonly hosts: readonly { readonly address: string; readonly dc: string }[];
    readonly reads: readonly DcRead[];
  },
): PreflightReport {
  const nodes = new Map<string, NodePreflight>();
  const unchecked: string[] = [];
  const notChecked = (host: string, dc: string, error: string) =>
    nodes.set(host, { host, dc, version: undefined, checked: false, error, checks: [] });
  for (const read of input.reads) {
    if ('error' in read) {
      const known = input.hosts.filter((host) => host.dc === read.dc);
      for (const host of known.length > 0 ? known : [{ address: `(${read.dc})` }]) {
        notChecked(host.address, read.dc, read.error);
      }
      unchecked.push(`${read.dc} could not be reached: ${read.error}`);
      continue;
    }
    for (const node of read.nodes) {
      nodes.set(node.host, {
        host: node.host,
        dc: node.dc,
        version: node.version,
        checked: node.error === undefined,
        error: node.error,
        checks: node.error === undefined ? checkNode(node) : [],
      });
      if (node.error !== undefined) {
        unchecked.push(`${node.host} (${node.dc}) could not be read: ${node.error}`);
      }
    }
    for (const host of input.hosts.filter((h) => h.dc === read.dc && !nodes.has(h.address))) {
      notChecked(host.address, host.dc, 'did not answer');
      unchecked.push(`${host.address} (${host.dc}) did not answer`);
    }
  }
  const sorted = [...nodes.values()].sort(
    (a, b) => ascending(a.dc, b.dc) || ascending(a.host, b.host),
  );
  for (const node of sorted) {
    for (const check of node.checks.filter((c) => c.status === 'unknown')) {
      unchecked.push(`${node.host} (${node.dc}) ${check.check}: ${check.message}`);
    }
  }
  const problems = problemLines(sorted);
  const verdict: PreflightVerdict =
    problems.length > 0 ? 'unsafe' : unchecked.length > 0 ? 'incomplete' : 'safe';
  const { keyspace, dc, at } = input;
  return { keyspace, dc, at, nodes: sorted, verdict, problems, unchecked };
}

/** The unsafe checks, one line per check and value, naming the nodes. */
export function problemLines(
  nodes: readonly Pick<NodePreflight, 'host' | 'dc' | 'checks'>[],
): string[] {
  const groups = new Map<string, { check: PreflightCheckName; value: string; hosts: string[] }>();
  for (const node of nodes) {
    for (const check of node.checks.filter((c) => c.status === 'unsafe')) {
      const value = check.value ?? '?';
      const key = `${check.check}\u0000${value}`;
      const group = groups.get(key) ?? { check: check.check, value, hosts: [] };
      group.hosts.push(`${node.host} (${node.dc})`);
      groups.set(key, group);
    }
  }
  return [...groups.values()].map(
    ({ check, value, hosts }) =>
      `${CHECKS[check].setting} ${value} on ${hosts.join(', ')}: ${CHECKS[check].why}`,
  );
}

/** The nodes read (no `error`) that fail a check, each with its unsafe checks only. */
export function unsafeNodes(
  nodes: readonly NodeSettings[],
): Pick<NodePreflight, 'host' | 'dc' | 'checks'>[] {
  return nodes.flatMap((node) => {
    const checks =
      node.error === undefined ? checkNode(node).filter((c) => c.status === 'unsafe') : [];
    return checks.length === 0 ? [] : [{ host: node.host, dc: node.dc, checks }];
  });
}
