/**
 * The simulation's virtual clock, behind the allocator's {@link Clock} interface.
 *
 * Time passes only when the scheduler releases the clock's tick, which it picks among the
 * store's steps like any other task: a tick moves time {@link TICK_MS} on, or, when nothing else
 * is left to run, straight to the earliest timer, and fires every timer then due, earliest
 * first. So a backoff can end between any two store steps, while a call's 10 s deadline passes
 * only when its refill is stuck for hundreds of ticks, or nothing else is left to do.
 */
import type fc from 'fast-check';

import type { Clock } from '../../../src/allocator/clock.js';

/** Virtual time one tick moves on while other steps are pending. */
export const TICK_MS = 25;

/** Whose timer it is: a dead process's timers never fire. */
export interface TimerOwner {
  readonly name: string;
  readonly crashed: boolean;
}

interface Timer {
  readonly due: number;
  /** Order of creation, to fire timers due together in the order they were set. */
  readonly serial: number;
  readonly owner: TimerOwner;
  readonly fn: () => void;
}

export class SimClock {
  private now = 0;
  private serial = 0;
  private timers: Timer[] = [];
  /** Whether a tick is waiting in the scheduler; one at a time is enough. */
  private armed = false;

  constructor(
    private readonly scheduler: fc.Scheduler,
    private readonly log: (line: string) => void,
  ) {}

  /** Virtual ms since the run started. */
  get elapsed(): number {
    return this.now;
  }

  /** The clock as `owner`'s allocator sees it. */
  for(owner: TimerOwner): Clock {
    return {
      now: () => this.now,
      sleep: (ms) => this.sleep(owner, ms),
      after: (ms, fn) => this.add(owner, ms, fn),
      // The simulated store answers through the scheduler, never through I/O.
      yieldToIo: () => Promise.resolve(),
    };
  }

  sleep(owner: TimerOwner, ms: number): Promise<void> {
    return new Promise<void>((resolve) => void this.add(owner, ms, resolve));
  }

  private add(owner: TimerOwner, ms: number, fn: () => void): () => void {
    const timer = { due: this.now + ms, serial: this.serial++, owner, fn };
    this.timers.push(timer);
    this.arm();
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  private arm(): void {
    if (this.armed || this.timers.length === 0) return;
    this.armed = true;
    void this.scheduler.schedule(Promise.resolve(), 'clock tick').then(() => {
      this.armed = false;
      this.tick();
      this.arm();
    });
  }

  private tick(): void {
    this.timers = this.timers.filter((t) => !t.owner.crashed);
    if (this.timers.length === 0) return;
    const idle = this.scheduler.count() === 0;
    const earliest = Math.min(...this.timers.map((t) => t.due));
    this.now = idle ? Math.max(this.now, earliest) : this.now + TICK_MS;
    // Timers set by the ones fired here wait for the next tick.
    const due = this.timers
      .filter((t) => t.due <= this.now)
      .sort((a, b) => a.due - b.due || a.serial - b.serial);
    for (const timer of due) {
      if (!this.timers.includes(timer)) continue; // cancelled by one fired before it
      this.timers = this.timers.filter((t) => t !== timer);
      this.log(`clock ${Math.round(this.now)} ms: a timer of ${timer.owner.name} fires`);
      timer.fn();
    }
  }
}
