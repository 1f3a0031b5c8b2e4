/** "## Machine": the machine, the Cassandra versions and the cluster the run measured, and why its absolute numbers are those of a crowded machine. */
import type { RawResults } from '../results.js';
import { markdownTable } from './format.js';

export function renderMachine(raw: RawResults): string[] {
  const { settings, machine } = raw;
  const out: string[] = [];
  out.push('## Machine', '');
  const versions = [...new Set(Object.values(machine.cassandra))].join(', ');
  out.push(
    markdownTable(
      ['', ''],
      [
        ['CPU', `${machine.cpuModel}, ${machine.cores} cores`],
        ['Memory', `${machine.memoryGiB} GiB`],
        ['OS', machine.os],
        ['Node', machine.node],
        [
          'Cassandra',
          `${versions} (\`SELECT release_version FROM system.local\` in ${Object.keys(machine.cassandra).join(', ')})`,
        ],
        ['Cluster', machine.topology],
        ['Load average at start', machine.loadAverage.join(', ')],
      ],
    ),
    '',
    `The Cassandra JVMs, the ${settings.processesPerDc * Object.keys(machine.cassandra).length} allocator processes and the benchmark share these ${machine.cores} cores, ` +
      'so absolute numbers are those of a crowded laptop-class machine; the ratios travel better.',
    '',
  );
  return out;
}
