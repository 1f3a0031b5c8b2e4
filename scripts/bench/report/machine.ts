/** "## Machine": the machine, the Cassandra versions and the cluster the run measured, and why its absolute numbers are those of a crowded machine. */
import type { RawResults } from '../results.js';
import { markdownTable } from './format.js';

export function renderMachine(raw: RawResults): string[] {
  const { machine } = raw;
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
    `The Cassandra JVMs, ${sharers(raw)} and the benchmark share these ${machine.cores} cores, ` +
      'so absolute numbers are those of a crowded laptop-class machine; the ratios travel better.',
    '',
  );
  return out;
}

/** Who else ran on the machine: the allocator processes, and the services of the HTTP phase. */
function sharers(raw: RawResults): string {
  const dcs = Object.keys(raw.machine.cassandra).length;
  const parts: string[] = [];
  if (!raw.settings.httpOnly)
    parts.push(`the ${raw.settings.processesPerDc * dcs} allocator processes`);
  if (raw.http !== undefined)
    parts.push(`the ${raw.http.services.length} HTTP services (section 5)`);
  return parts.length === 0 ? 'nothing else' : parts.join(', ');
}
