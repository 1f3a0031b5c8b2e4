/**
 * Coordinators that let a request time out client-side are tried last (never left out) for
 * {@link STALL_QUARANTINE_MS}: a stalled node keeps its connections, so the driver counts it up.
 */

export const STALL_QUARANTINE_MS = 30_000;

export class StalledCoordinators {
  readonly #until = new Map<string, number>();

  constructor(
    private readonly quarantineMs: number = STALL_QUARANTINE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** `address` as the driver names a host, `ip:port`. */
  mark(address: string): void {
    this.#until.set(address, this.now() + this.quarantineMs);
  }

  isStalled(address: string): boolean {
    const until = this.#until.get(address);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.#until.delete(address);
    return false;
  }

  markTimedOut(error: unknown): void {
    for (const [address, cause] of timeoutsOf(error)) {
      // By name, so that errors of another copy of the driver count too.
      if ((cause as { name?: unknown } | null)?.name === 'OperationTimedOutError')
        this.mark(address);
    }
  }
}

/** The host each part of a driver error came from. */
function timeoutsOf(error: unknown): [string, unknown][] {
  if (typeof error !== 'object' || error === null) return [];
  const e = error as { coordinator?: unknown; host?: unknown; innerErrors?: unknown };
  const found: [string, unknown][] = [];
  const address = typeof e.coordinator === 'string' ? e.coordinator : e.host;
  if (typeof address === 'string') found.push([address, error]);
  if (typeof e.innerErrors === 'object' && e.innerErrors !== null) {
    for (const [host, inner] of Object.entries(e.innerErrors)) found.push([host, inner]);
  }
  return found;
}
