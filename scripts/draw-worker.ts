/**
 * One allocator process for tests and the demo: appends every ID it hands out to --out within
 * about 20 ms and prints a JSON summary line when done. Stops after --count IDs, --duration-ms of
 * drawing from when it is ready, or on SIGTERM. `node --import tsx scripts/draw-worker.ts --dc dc1
 * --contact-points 127.0.0.1 --keyspace idgen --sequence orders --out dc1.ids`.
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
// Also while a call waits for a refill: a kill mid-refill would lose the IDs handed out before.
const flusher = setInterval(flush, 20);

let stopping = false;
process.on('SIGTERM', () => (stopping = true));

const errors: Record<string, number> = {};
/** When each error happened (the first 1,000 of each code), for tests that inject a fault. */
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
// Paced from here: a pace counted from before connecting would make up for that time in a burst.
const started = Date.now();
const deadline = values['duration-ms'] ? started + Number(values['duration-ms']) : Infinity;

while (!stopping && drawn < maxCount && Date.now() < deadline) {
  try {
    const id = await sequence.next();
    pending.push(id.toString());
    drawn++;
    if (pending.length >= 500 || Date.now() - lastFlush >= 20) flush();
  } catch (err) {
    const code = (err as Partial<IdGenError>).code ?? 'UNKNOWN';
    lastError = err instanceof Error ? err.message : String(err);
    // The first error of each code goes to stderr, so a stuck worker says why.
    if (errors[code] === undefined)
      process.stderr.write(`draw-worker ${dc}: ${code}: ${lastError}\n`);
    errors[code] = (errors[code] ?? 0) + 1;
    const times = (errorsAt[code] ??= []);
    if (times.length < 1_000) times.push(Date.now());
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
const grantee = sequence.grantee;
await ids.close();
process.stdout.write(
  JSON.stringify(
    { event: 'done', pid: process.pid, dc, grantee, drawn, errors, errorsAt, lastError, stats },
    (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v),
  ) + '\n',
);
