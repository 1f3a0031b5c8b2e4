/* global setInterval, setImmediate, setTimeout, process, Buffer */
// Stands in for the library in the torture worker and in the draw worker of the integration
// tests. FAKE_LIBRARY (JSON) picks how it behaves; without it, `refill-wait`:
// - refill-wait: next() hands out 1..300 at once, then waits for good, as a refill does while
//   its DC is cut off.
// - ledger: next(), take() and nextIds() hand out IDs at once (next() yields to I/O first once
//   in 512 calls, as the library does), each written to the file `ledger` as it is handed to
//   the caller (a SIGKILL cannot lose it there), so a test can compare the worker's history with
//   what was handed out; with `jitter`, every call takes its IDs when made and hands them over
//   a turn, 1 ms or 3 ms later, so that concurrent calls resolve out of the order they took
//   their IDs in (a call with a `timeoutMs` below that fails with IDGEN_DEADLINE_EXCEEDED at
//   its deadline, its IDs handed to nobody); close() writes the file `closedMarker` at once, so
//   that later calls throw IDGEN_CLOSED, and resolves `closeMs` (default 100) later, as giving
//   IDs back takes round trips to the store; with `closeError` ({ name, message, code? }) it
//   then throws it.
// - serve-after-close: ledger, but it keeps handing out IDs after close() (a broken library).
// - take-then-yield: ledger, but every next() takes its ID, then yields to I/O before it
//   resolves, as the library's next() does once in 512 IDs: a close() in that turn starts after
//   the ID was taken, and the call still resolves with it. stats().issued counts the IDs taken.
// - stale-block: ledger with jitter, but it sets the IDs 1..1000 aside and hands them out once
//   3000 others are out: each call's IDs increase and none repeats, yet a call made after
//   others resolved gets IDs below theirs (a broken library).
// - short-take: ledger, but take() of more than one ID hands out one fewer than asked (a broken
//   library).
// - throw: ledger for `after` IDs, then every call throws `error` ({ name, message, code? }).
// - busy: ledger for `after` IDs, then next() spins without end: signal handlers never run.
// With `unreachable`, in any mode, connect() fails with IDGEN_STORE_UNAVAILABLE (as when every
// node of the worker's DC is down) until the file `reachableMarker` exists.
import fs from 'node:fs';

const config = JSON.parse(process.env.FAKE_LIBRARY ?? '{}');
const mode = config.mode ?? 'refill-wait';
const ledger = config.ledger === undefined ? undefined : fs.openSync(config.ledger, 'a');
/** The IDs taken (the library's `issued`), and how many of them the caller was handed. */
let taken = mode === 'stale-block' ? 1000 : 0;
let handed = 0;
/** stale-block: the next of the IDs set aside. */
let stale = 1;
const jitter = config.jitter === true || mode === 'stale-block';
let calls = 0;
let closed = false;
setInterval(() => {}, 1_000); // a driver keeps the process alive with its sockets

/** Takes `count` IDs for a call: the first of them. */
function takeIds(count) {
  if (mode === 'stale-block' && handed >= 3000 && stale + count - 1 <= 1000) {
    stale += count;
    return stale - count;
  }
  taken += count;
  return taken - count + 1;
}

/**
 * Hands out first..last: in the ledger before the caller can see them. With jitter, a call whose
 * deadline (`timeoutMs`) comes before its turn fails then, and its IDs go to nobody.
 */
async function handOut(first, last, options) {
  if (jitter) {
    // A turn, 1 ms or 3 ms: timers of one duration fire in the order they were set.
    const ms = [0, 1, 3][Math.floor(Math.random() * 3)];
    const deadline = options?.timeoutMs;
    if (deadline !== undefined && ms > deadline) {
      await new Promise((resolve) => setTimeout(resolve, deadline));
      throw Object.assign(new Error('no ID within the deadline'), {
        code: 'IDGEN_DEADLINE_EXCEEDED',
      });
    }
    await new Promise((resolve) => (ms === 0 ? setImmediate(resolve) : setTimeout(resolve, ms)));
  }
  if (ledger !== undefined) {
    const bytes = Buffer.alloc((last - first + 1) * 8);
    for (let id = first; id <= last; id++) bytes.writeDoubleLE(id, (id - first) * 8);
    fs.writeSync(ledger, bytes);
  }
  handed += last - first + 1;
}

function check() {
  if (closed && mode !== 'serve-after-close') {
    throw Object.assign(new Error('closed'), { code: 'IDGEN_CLOSED' });
  }
  if (mode === 'throw' && handed >= config.after) {
    const { name, message, code } = config.error;
    const error = name === 'TypeError' ? new TypeError(message) : new Error(message);
    throw code === undefined ? error : Object.assign(error, { code });
  }
  if (mode === 'busy' && handed >= config.after) for (;;);
}

export async function connect() {
  if (config.unreachable === true && !fs.existsSync(config.reachableMarker)) {
    throw Object.assign(new Error('no node of dc1 could be reached'), {
      code: 'IDGEN_STORE_UNAVAILABLE',
    });
  }
  return {
    sequence() {
      return {
        grantee: 'dc1',
        stats: () => ({ shardMoves: 0, issued: taken, blockSize: 1000 }),
        tryNext: () => undefined,
        async next(options) {
          if (mode === 'refill-wait') {
            if (handed < 300) return ++handed;
            return new Promise(() => {});
          }
          if (mode === 'take-then-yield') {
            check();
            const id = takeIds(1);
            await new Promise((resolve) => setImmediate(resolve));
            await handOut(id, id);
            return id;
          }
          if (++calls % 512 === 0) await new Promise((resolve) => setImmediate(resolve));
          check();
          const id = takeIds(1);
          await handOut(id, id, options);
          return id;
        },
        async take(count, options) {
          if (mode === 'refill-wait') throw new Error('not used');
          check();
          const got = mode === 'short-take' && count > 1 ? count - 1 : count;
          const first = takeIds(got);
          await handOut(first, first + got - 1, options);
          return { first, last: first + got - 1 };
        },
        async nextIds(count, options) {
          if (mode === 'refill-wait') throw new Error('not used');
          check();
          const first = takeIds(count);
          await handOut(first, first + count - 1, options);
          return Array.from({ length: count }, (_, i) => first + i);
        },
      };
    },
    async close() {
      closed = true;
      if (config.closedMarker !== undefined) fs.writeFileSync(config.closedMarker, 'closed');
      await new Promise((resolve) => setTimeout(resolve, config.closeMs ?? 100));
      if (config.closeError !== undefined) {
        const { message, code } = config.closeError;
        throw Object.assign(new Error(message), code === undefined ? {} : { code });
      }
    },
  };
}
