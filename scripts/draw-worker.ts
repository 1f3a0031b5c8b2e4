/**
 * One allocator process, as a service in one DC would run it: draws IDs from a sequence and
 * appends every ID it hands out to a file, so that tests and the demo can check uniqueness
 * across processes and DCs. Prints one JSON summary line on stdout when done.
 *
 *   node --import tsx scripts/draw-worker.ts --dc dc1 --contact-points 127.0.0.1 \
 *     --keyspace idgen --sequence orders --duration-ms 10000 --out /tmp/dc1-1.ids
 *
 * --call-timeout-ms sets the calls' deadline (connect()'s callTimeoutMs).
 * It stops after --count IDs or --duration-ms of drawing (from when it is ready), or on SIGTERM
 * (then closes cleanly, returning its unused block). IDs reach the file within about 20 ms of
 * being handed out, also while a call waits, so a SIGKILL loses at most those of the last 20 ms,
 * never uniqueness.
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { connect } from '../src/index.js';
import type { IdGenError } from '../src/index.js';

const { values } = parseArgs({
  options: {
    dc: { type: 'string' },
    'contact-points': { type: 'string' },
    keyspace: { type: 'string' },
    sequence: { type: 'string' },
    count: { type: 'string' },
    'duration-ms': { type: 'string' },
    rate: { type: 'string' },
    'call-timeout-ms': { type: 'string' },
    out: { type: 'string' },
  },
});

function required(name: keyof typeof values): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') {
    console.error(`draw-worker: --${name} is required`);
    process.exit(1);
  }
  return v;
}

const dc = required('dc');
const out = required('out');
const maxCount = values.count ? Number(values.count) : Infinity;
/** IDs per second; unlimited when absent. Paced in slices so a DC's ranges last a known time. */
const rate = values.rate ? Number(values.rate) : Infinity;

const fd = fs.openSync(out, 'a');
let pending: string[] = [];
let lastFlush = Date.now();
const flush = () => {
  lastFlush = Date.now();
  if (pending.length > 0) {
    fs.writeSync(fd, pending.join('\n') + '\n');
    pending = [];
  }
};
// Also while a call waits for a refill, which the loop's own flushes never reach: the IDs handed
// out before it are the ones a kill mid-refill (what the fault tests do) would lose otherwise.
const flusher = setInterval(flush, 20);

let stopping = false;
process.on('SIGTERM', () => (stopping = true));

const errors: Record<string, number> = {};
/**
 * When each error happened (ms since the epoch, the first 1,000 of each code): tests tell the
 * errors of a slow start from those of the fault they inject.
 */
const errorsAt: Record<string, number[]> = {};
let drawn = 0;
let lastError: string | undefined;

const ids = await connect({
  contactPoints: required('contact-points').split(','),
  localDataCenter: dc,
  keyspace: required('keyspace'),
  ...(values['call-timeout-ms'] ? { callTimeoutMs: Number(values['call-timeout-ms']) } : {}),
});
const sequence = ids.sequence(required('sequence'), { bigint: true });
process.stdout.write(JSON.stringify({ event: 'ready', pid: process.pid }) + '\n');
// Counted from here: starting and connecting take as long as the machine's load makes them (a
// pace counted from before would make up for that time in a burst).
const started = Date.now();
const deadline = values['duration-ms'] ? started + Number(values['duration-ms']) : Infinity;

while (!stopping && drawn < maxCount && Date.now() < deadline) {
  try {
    const id = await sequence.next();
    pending.push(id.toString());
    drawn++;
    // Flushed often, so that tests can watch a worker's progress while it draws.
    if (pending.length >= 500 || Date.now() - lastFlush >= 20) flush();
  } catch (err) {
    const code = (err as Partial<IdGenError>).code ?? 'UNKNOWN';
    // The first error of each code goes to stderr, so a stuck worker says why.
    if (errors[code] === undefined) {
      process.stderr.write(
        `draw-worker ${dc}: ${code}: ${err instanceof Error ? err.message : String(err)}\n`,
      );
    }
    errors[code] = (errors[code] ?? 0) + 1;
    const times = (errorsAt[code] ??= []);
    if (times.length < 1_000) times.push(Date.now());
    lastError = err instanceof Error ? err.message : String(err);
    flush();
    await new Promise((r) => setTimeout(r, 200));
  }
  if (rate !== Infinity && drawn % 10 === 0) {
    const due = started + (drawn / rate) * 1000;
    const wait = due - Date.now();
    if (wait > 0) {
      flush();
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
clearInterval(flusher);
flush();
fs.closeSync(fd);
const stats = sequence.stats();
const grantee = sequence.grantee; // the shard its IDs came from (its DC on an unsharded sequence)
await ids.close();
process.stdout.write(
  JSON.stringify(
    { event: 'done', pid: process.pid, dc, grantee, drawn, errors, errorsAt, lastError, stats },
    (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v),
  ) + '\n',
);
