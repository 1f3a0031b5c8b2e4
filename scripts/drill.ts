/**
 * `npm run drill`: under `commitlog_sync: periodic`, every dc3 node is SIGKILLed while dc3 draws,
 * losing acknowledged writes; then a new dc3 process hands out IDs again (the hazard) and, after
 * `retireDcRanges`, none (the repair). A kill that lost nothing is retried, up to `--attempts`.
 * Exit codes: 0 repaired, 1 an ID handed out twice after the repair, 2 bad usage or a cluster
 * that loses no writes, 3 no attempt lost a write (inconclusive).
 */
import { randomBytes } from 'node:crypto';

import cassandra from 'cassandra-driver';
import { Command, CommanderError, InvalidArgumentError } from 'commander';

import * as manager from './cluster/manager.js';
import { nodeSpecs } from './cluster/topology.js';
import { connect, initSchema, type DcState, type IdGen } from '../src/index.js';

const DC = 'dc3';
const OTHER_DC = 'dc1';

/** What one attempt saw: the IDs dc3 handed out before the kill, its state before and after. */
interface Attempt {
  readonly sequence: string;
  readonly before: bigint[];
  readonly seen: Pick<DcState, 'version' | 'lastInteger'>;
  readonly after: DcState | undefined;
}

const started = performance.now();
const say = (line: string): void =>
  console.log(
    `[drill ${((performance.now() - started) / 1_000).toFixed(0).padStart(4)} s] ${line}`,
  );

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('a positive integer');
  return n;
}

async function main(): Promise<number> {
  const options = new Command('drill')
    .description('a DC loses acknowledged writes for real, then retire-ranges repairs it')
    .option('--draw-seconds <n>', 'how long dc3 draws before its nodes are killed', positiveInt, 6)
    .option('--attempts <n>', 'kills to try until one loses writes', positiveInt, 3)
    .exitOverride()
    .parse(process.argv)
    .opts<{ drawSeconds: number; attempts: number }>();
  const topology = manager.currentTopology();
  if (topology.commitlog !== 'periodic') {
    console.error(
      'drill: the local cluster runs commitlog_sync batch, under which a kill loses nothing. Run "npm run cluster -- up --commitlog periodic" first (and "npm run cluster -- up" after, to go back).',
    );
    return 2;
  }
  const contactPoints = manager.contactPointsByDc(topology);
  const dcNodes = nodeSpecs(topology)
    .filter((node) => node.dc === DC)
    .map((node) => node.name);
  const keyspace = `drill_${randomBytes(4).toString('hex')}`;
  const connection = (dc: string) => ({
    contactPoints: contactPoints[dc]!,
    localDataCenter: dc,
    keyspace,
    // The drill's point: the nodes run commitlog_sync periodic, which connect() would refuse.
    allowUnsafeCluster: true,
  });
  const replication = Object.fromEntries(
    Object.keys(contactPoints).map((dc) => [dc, Math.min(3, topology.nodesPerDc)]),
  );
  await initSchema({ ...connection(OTHER_DC), replication });
  say(`keyspace ${keyspace}, replication ${JSON.stringify(replication)}`);
  const other = await connect(connection(OTHER_DC));
  try {
    for (let n = 1; n <= options.attempts; n++) {
      const attempt = await killDuringDraws(
        other,
        `orders_${n}`,
        options.drawSeconds,
        connection,
        dcNodes,
      );
      const { seen, after } = attempt;
      const lost =
        after === undefined || after.version < seen.version || after.lastInteger < seen.lastInteger;
      say(
        `${DC}'s state before the kill: version ${seen.version}, last_integer ${seen.lastInteger}; after: ${after === undefined ? 'no row' : `version ${after.version}, last_integer ${after.lastInteger}`}`,
      );
      if (!lost) {
        say('nothing was lost this time (the last sync had everything); trying again');
        continue;
      }
      return await repair(other, attempt, connection);
    }
  } finally {
    await other.close();
    const { contactPoints: points, localDataCenter } = connection(OTHER_DC);
    const client = new cassandra.Client({ contactPoints: points, localDataCenter });
    await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`).catch(() => undefined);
    await client.shutdown();
  }
  say(`no attempt lost a write in ${options.attempts} kills: inconclusive`);
  return 3;
}

type Connection = (dc: string) => {
  contactPoints: string[];
  localDataCenter: string;
  keyspace: string;
};

async function killDuringDraws(
  other: IdGen,
  sequence: string,
  drawSeconds: number,
  connection: Connection,
  dcNodes: readonly string[],
): Promise<Attempt> {
  await other.createSequence(sequence, { blockSize: 100, dcRangeSize: 1_000_000 });
  // Past one periodic sync (10 s): the settings are on dc3's disks before the drill begins.
  await new Promise((resolve) => setTimeout(resolve, 11_000));
  const drawer = await connect(connection(DC));
  const store = await manager.openStore(connection(DC).keyspace, DC);
  const before: bigint[] = [];
  let seen = { version: 0, lastInteger: 0n };
  let drawing = true;
  const seq = drawer.sequence(sequence, { bigint: true });
  const draws = (async () => {
    while (drawing) {
      try {
        before.push(await seq.next());
      } catch {
        return; // the DC is gone
      }
    }
  })();
  const deadline = performance.now() + drawSeconds * 1_000;
  while (performance.now() < deadline) {
    const state = await store.readDcState(sequence, DC);
    if (state !== undefined && state.version > seen.version) seen = state;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  say(`${sequence}: ${DC} drew ${before.length} IDs; killing ${dcNodes.join(', ')} at once`);
  await manager.killNodes(dcNodes);
  drawing = false;
  await draws;
  // Nothing of these processes' may reach the restarted DC: they held blocks of the lost state.
  await Promise.allSettled([drawer.close(), store.close()]);
  say(`starting ${dcNodes.join(', ')} again`);
  await manager.startNodes(dcNodes);
  const reader = await manager.openStore(connection(DC).keyspace, DC);
  const after = await reader.readDcState(sequence, DC).finally(() => reader.close());
  return { sequence, before, seen, after };
}

async function repair(other: IdGen, attempt: Attempt, connection: Connection): Promise<number> {
  const { sequence, before } = attempt;
  const count = Math.max(1_000, Math.min(before.length, 20_000));
  const handed = new Set([...before, ...(await drawFrom(other, sequence, 1_000))]);

  const control = await drawIn(connection, sequence, count);
  const first = new Set(before);
  const again = control.filter((id) => first.has(id)).length;
  say(
    `without a repair: a new ${DC} process drew ${count} IDs, ${again} of them handed out before`,
  );
  for (const id of control) handed.add(id);

  const retiring = await connect(connection(DC));
  try {
    for (const s of await retiring.retireDcRanges(sequence)) {
      say(
        `retire-ranges: ${s.grantee} ${s.retired ? `retired grant ${s.grant?.number} [${s.grant?.min}, ${s.grant?.max}], ${s.gap} IDs left as a gap` : 'nothing to retire'}`,
      );
    }
  } finally {
    await retiring.close();
  }

  const repaired = await drawIn(connection, sequence, count);
  const otherAfter = await drawFrom(other, sequence, 1_000);
  const twice = [...repaired, ...otherAfter].filter((id) => handed.has(id)).length;
  const highest = [...handed].reduce((a, b) => (a > b ? a : b), 0n);
  const lowest = repaired.reduce((a, b) => (a < b ? a : b));
  say(
    `after retire-ranges: a new ${DC} process drew ${repaired.length} IDs from ${lowest} (every ID handed out before: at most ${highest}), and ${OTHER_DC} ${otherAfter.length}; ${twice} handed out before`,
  );
  if (again === 0) say('note: the control handed out no ID again (the loss spared every block)');
  if (twice > 0) {
    say('FAILED: IDs were handed out twice after the repair');
    return 1;
  }
  say(`PASSED: ${DC} lost writes for real; after retire-ranges no ID was handed out twice`);
  return 0;
}

async function drawIn(connection: Connection, sequence: string, count: number): Promise<bigint[]> {
  const ids = await connect(connection(DC));
  try {
    return await drawFrom(ids, sequence, count);
  } finally {
    await ids.close();
  }
}

async function drawFrom(ids: IdGen, sequence: string, count: number): Promise<bigint[]> {
  const seq = ids.sequence(sequence, { bigint: true });
  const out: bigint[] = [];
  while (out.length < count) out.push(seq.tryNext() ?? (await seq.next()));
  await seq.close();
  return out;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    // commander has printed its line; --help ends with exit code 0.
    if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2);
    console.error(error);
    process.exit(2);
  },
);
