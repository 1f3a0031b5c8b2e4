/**
 * The preflight's checks on this process's DC's nodes at `start()`, every `everyMs` and when a node
 * comes up. While one is unsafe, `admit()` refuses claims unless `allowUnsafe`: its crash can roll
 * the DC's state back and hand IDs out twice. Held IDs are still served; an unread node keeps its
 * last verdict.
 */

import { FailureLog } from '../allocator/failures.js';
import type { Clock } from '../allocator/clock.js';
import { UnsafeClusterError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { AdminStore, NodeSettings } from '../store/port.js';
import { problemLines, unsafeNodes, type NodePreflight } from './preflight.js';

const ALLOW_UNSAFE_OPTION = '{ allowUnsafeCluster: true }';

/** What a driver client emits (cassandra-driver's `hostUp`, `hostAdd`). */
export interface NodeEvents {
  on(event: 'hostUp' | 'hostAdd', listener: () => void): unknown;
  off(event: 'hostUp' | 'hostAdd', listener: () => void): unknown;
}

export interface DurabilityWatchOptions {
  readonly store: Pick<AdminStore, 'readNodeSettings'>;
  readonly dc: string;
  readonly clock: Clock;
  readonly logger: Logger | undefined;
  /** Between the end of one check and the next. */
  readonly everyMs: number;
  readonly allowUnsafe: boolean;
  readonly onChecked?: ((unsafeNodes: number) => void) | undefined;
}

const READ_FAILURES = {
  read: {
    failed: "reading the settings of this DC's nodes failed; their last verdicts stand",
    recovered: "reading the settings of this DC's nodes works again",
  },
} as const;

const NODE_EVENTS = ['hostUp', 'hostAdd'] as const;

export class DurabilityWatch {
  readonly #options: DurabilityWatchOptions;
  readonly #failures: FailureLog<'read'>;
  #unsafe = new Map<string, Pick<NodePreflight, 'host' | 'dc' | 'checks'>>();
  #first: Promise<void> | undefined;
  #checking: Promise<void> | undefined;
  /** Check once more after the check in flight. */
  #again = false;
  #cancel: (() => void) | undefined;
  #unfollow: (() => void) | undefined;
  #closed = false;
  #logged = '';

  constructor(options: DurabilityWatchOptions) {
    this.#options = options;
    this.#failures = new FailureLog(options.logger, READ_FAILURES);
  }

  start(): void {
    this.#first ??= this.check();
  }

  /** One line per unsafe check and value, with its fix. */
  get problems(): string[] {
    return problemLines([...this.#unsafe.values()]);
  }

  /**
   * Resolves once the first check ended (after {@link start}), unless a node of the DC is unsafe.
   * @throws {UnsafeClusterError} while one is, without `allowUnsafe`.
   */
  async admit(): Promise<void> {
    await this.#first;
    if (this.#options.allowUnsafe || this.#unsafe.size === 0) return;
    throw new UnsafeClusterError(this.problems, ALLOW_UNSAFE_OPTION);
  }

  follow(events: NodeEvents): void {
    const recheck = () => void this.check();
    for (const event of NODE_EVENTS) events.on(event, recheck);
    this.#unfollow = () => {
      for (const event of NODE_EVENTS) events.off(event, recheck);
    };
  }

  /** Checks now, or once more after the check in flight. Never rejects. */
  check(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#checking !== undefined) {
      this.#again = true;
      return this.#checking;
    }
    this.#cancel?.();
    this.#checking = this.#checkUntilCurrent().finally(() => {
      this.#checking = undefined;
      if (this.#closed) return;
      this.#cancel = this.#options.clock.after(this.#options.everyMs, () => {
        this.#cancel = undefined;
        void this.check();
      });
    });
    return this.#checking;
  }

  /** Waits for the check in flight. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#cancel?.();
    this.#unfollow?.();
    await this.#checking;
  }

  async #checkUntilCurrent(): Promise<void> {
    do {
      this.#again = false;
      await this.#checkOnce();
    } while (this.#again && !this.#closed);
  }

  async #checkOnce(): Promise<void> {
    const { store, dc } = this.#options;
    let read: readonly NodeSettings[];
    try {
      read = (await store.readNodeSettings()).filter((node) => node.dc === dc);
    } catch (error) {
      this.#failures.failed('read', error, { dc });
      return;
    }
    this.#failures.recovered('read', { dc });
    const unread = [...this.#unsafe.values()].filter((node) =>
      read.some((other) => other.host === node.host && other.error !== undefined),
    );
    this.#unsafe = new Map([...unread, ...unsafeNodes(read)].map((node) => [node.host, node]));
    this.#options.onChecked?.(this.#unsafe.size);
    this.#logChange();
  }

  #logChange(): void {
    const { logger, dc, allowUnsafe } = this.#options;
    const problems = this.problems;
    const finding = problems.join('\n');
    if (finding === this.#logged) return;
    this.#logged = finding;
    if (problems.length === 0) {
      logger?.info({ dc }, `the nodes of ${dc} are safe again; blocks are claimed from it again`);
      return;
    }
    const consequence = allowUnsafe
      ? 'allowUnsafeCluster is set, so blocks are still claimed: a crash of such a node can hand out IDs twice'
      : `no block is claimed from ${dc} until it is fixed; IDs already held are still served`;
    logger?.error(
      { dc, problems },
      `unsafe node settings in ${dc}: ${problems.join('; ')}. ${consequence}`,
    );
  }
}
