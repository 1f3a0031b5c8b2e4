/** `npm run cluster -- <command>`: a real multi-DC Cassandra on this machine, from Maven jars. */
import { Command, InvalidArgumentError, Option } from 'commander';
import * as cluster from './cluster/manager.js';
import { PAXOS_VARIANTS, cacheDir, defaultTopology, describeTopology } from './cluster/topology.js';
import type { Topology } from './cluster/topology.js';

// `status | head`: a reader gone ends the output, not an `up` or a `heal` half done.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
});

function positiveInt(value: string): number {
  const n = Number(value);
  if (Number.isInteger(n) && n >= 1 && n <= 9) return n;
  throw new InvalidArgumentError('an integer from 1 to 9');
}

function printNodes(topology: Topology, nodes: readonly cluster.NodeStatus[]): void {
  const rss = nodes.reduce((sum, n) => sum + (n.rssMiB ?? 0), 0);
  console.log(`${describeTopology(topology)}; ${rss.toFixed(0)} MiB resident in all`);
  for (const { node, state, cql, partitioned, rssMiB } of nodes) {
    const health = state === 'running' ? (cql ? 'UP' : 'STARTING') : state.toUpperCase();
    const memory = rssMiB === undefined ? '' : `${rssMiB.toFixed(0)} MiB`;
    const line = `${node.name.padEnd(7)} ${node.address.padEnd(11)} ${node.dc.padEnd(5)} ${health.padEnd(8)} ${memory.padEnd(8)} ${partitioned ? '(partitioned)' : ''}`;
    console.log(line.trimEnd());
  }
}

const program = new Command('cluster')
  .description(`Local multi-DC Cassandra cluster (cache: ${cacheDir()})`)
  .showHelpAfterError();

program
  .command('up')
  .description('install Cassandra if needed, start every node, wait until all are up')
  .option('--dcs <n>', 'number of datacenters', positiveInt)
  .option(
    '--nodes-per-dc <n>',
    "nodes per datacenter (default: the existing cluster's, else IDGEN_NODES_PER_DC, else 3); another number than the existing cluster's recreates it, dropping its data",
    positiveInt,
  )
  .addOption(
    new Option(
      '--paxos <variant>',
      "paxos_variant of every node (default: the existing cluster's, else IDGEN_PAXOS, else v2); a running cluster is restarted node by node",
    ).choices(PAXOS_VARIANTS),
  )
  .addOption(
    new Option(
      '--commitlog <sync>',
      'commitlog_sync: batch (a write is synced before it is acknowledged) or periodic (loses up to 10 s of acknowledged writes on a crash; for negative controls only)',
    )
      .choices(['batch', 'periodic'])
      .default('batch'),
  )
  .action(async (opts: Partial<Topology>) => {
    const started = Date.now();
    const fallback = cluster.hasCluster() ? cluster.currentTopology() : defaultTopology();
    const topology = { ...fallback, ...opts };
    const nodes = await cluster.up(topology, (line) => console.error(line));
    printNodes(topology, nodes);
    console.error(`cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

program
  .command('status')
  .description('the topology, then one line per node: name, address, DC, state, memory')
  .action(async () => printNodes(cluster.currentTopology(), await cluster.status()));

program
  .command('down')
  .description('stop every node, keep the data')
  .action(async () => cluster.down());

program
  .command('destroy')
  .description('stop every node and delete the data')
  .action(async () => cluster.destroy());

program
  .command('partition <dc-or-node>')
  .description(
    'cut a DC (dc3) or a node (dc1-2) off from every other node (clients still reach it); verified by its effect',
  )
  .action(async (target: string) => {
    await cluster.partition(target, (line) => console.error(line));
    console.log(
      /^dc\d+$/.test(target)
        ? `${target} partitioned: SERIAL fails there, LOCAL_SERIAL works`
        : `${target} partitioned: LOCAL_SERIAL fails through it, its DC keeps the rest`,
    );
  });

program
  .command('cut-clients <dc>')
  .description(
    "hide a DC's nodes from this host's clients (their CQL port); the nodes still reach each other",
  )
  .action(async (dc: string) => {
    await cluster.cutClients(dc, (line) => console.error(line));
    console.log(`${dc} cut from this host's clients: no node of ${dc} accepts a connection`);
  });

program
  .command('heal')
  .description('remove every partition and client cut, and wait until SERIAL works again')
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
  console.error(`cluster: ${err instanceof Error ? err.message : String(err)}`);
  if (process.argv.includes('--verbose') && err instanceof Error) console.error(err.stack);
  process.exitCode = 1;
}
