/**
 * `npm run cluster -- <command>`: a real multi-DC Cassandra on this machine, from Maven Central
 * jars, for development, tests, CI, the demo and the benchmarks.
 */
import { Command, InvalidArgumentError } from 'commander';
import * as cluster from './cluster/manager.js';
import type { NodeStatus } from './cluster/manager.js';
import { ClusterError, cacheDir } from './cluster/topology.js';

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 9)
    throw new InvalidArgumentError('an integer from 1 to 9');
  return n;
}

function printNodes(nodes: readonly NodeStatus[]): void {
  for (const { node, state, cql, partitioned } of nodes) {
    const health = state === 'running' ? (cql ? 'UP' : 'STARTING') : state.toUpperCase();
    console.log(
      [
        node.name.padEnd(7),
        node.address.padEnd(11),
        node.dc.padEnd(5),
        health,
        partitioned ? '(partitioned)' : '',
      ]
        .join(' ')
        .trimEnd(),
    );
  }
}

const program = new Command('cluster')
  .description(`Local multi-DC Cassandra cluster (cache: ${cacheDir()})`)
  .showHelpAfterError();

program
  .command('up')
  .description('install Cassandra if needed, start every node, wait until all are up')
  .option('--dcs <n>', 'number of datacenters', positiveInt, 3)
  .option('--nodes-per-dc <n>', 'nodes per datacenter', positiveInt, 1)
  .action(async (opts: { dcs: number; nodesPerDc: number }) => {
    const started = Date.now();
    const nodes = await cluster.up({ dcs: opts.dcs, nodesPerDc: opts.nodesPerDc }, (line) =>
      console.error(line),
    );
    printNodes(nodes);
    console.error(`cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

program
  .command('status')
  .description('one line per node: name, address, DC, state')
  .action(async () => printNodes(await cluster.status()));

program
  .command('down')
  .description('stop every node, keep the data')
  .action(async () => cluster.down());

program
  .command('destroy')
  .description('stop every node and delete the data')
  .action(async () => cluster.destroy());

program
  .command('partition <dc>')
  .description('cut a DC off from all others (its clients still reach it); verified by its effect')
  .action(async (dc: string) => {
    await cluster.partition(dc, (line) => console.error(line));
    console.log(`${dc} partitioned: SERIAL fails there, LOCAL_SERIAL works`);
  });

program
  .command('heal')
  .description('remove every partition and wait until SERIAL works again')
  .action(async () => {
    await cluster.heal();
    console.log('healed: SERIAL works from every DC');
  });

for (const [name, description, fn] of [
  ['pause', 'SIGSTOP a node (dc2 or dc2-1)', cluster.pause],
  ['resume', 'SIGCONT a paused node', cluster.resume],
  ['kill', 'SIGKILL a node', cluster.kill],
  ['start', 'start a stopped node and wait until it is up', cluster.start],
] as const) {
  program
    .command(`${name} <node>`)
    .description(description)
    .action(async (node: string) => {
      await fn(node);
      console.log(`${node}: ${name} done`);
    });
}

try {
  await program.parseAsync();
} catch (err) {
  const message =
    err instanceof ClusterError ? err.message : err instanceof Error ? err.message : String(err);
  console.error(`cluster: ${message}`);
  if (process.argv.includes('--verbose') && err instanceof Error) console.error(err.stack);
  process.exitCode = 1;
}
