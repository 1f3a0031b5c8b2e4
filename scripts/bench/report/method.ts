/** "## Method": the options of the run and how each figure is measured. */
import type { RawResults } from '../results.js';
import { plural } from './format.js';

export function renderMethod(raw: RawResults): string[] {
  const { settings } = raw;
  const out: string[] = [];
  out.push('## Method', '');
  out.push(
    `- Options: ${plural(settings.runs, 'run')}, measured ${settings.durationSeconds} s and warm-up ${settings.warmupSeconds} s per cluster run, ${plural(settings.processesPerDc, 'process', 'processes')} per DC, ` +
      `block sizes ${settings.blockSizes.join(', ')}, naive clients 1 and ${settings.naiveClients}, burst ${settings.burstFactor} blocks.`,
    '- Each run of the cluster phases does them all in turn (naive, each block size tight then paced, burst, cold start), on fresh sequences, so the ratios pair measurements taken minutes apart at most.',
    '- LWTs are counted by the allocator: conditional writes (`lwtWrites`) plus reads at SERIAL and LOCAL_SERIAL; the naive baseline counts its conditional updates.',
    '- Waits are `stats().waits` diffed over the measured window, i.e. after warm-up; CAS retries are `casRejections` (lost races, each retried).',
    '- Latency percentiles come from a log-linear histogram (1.6 % precision) merged over the processes of a run.',
  );
  if (raw.scale !== undefined) {
    out.push(
      `- Scale: ${plural(settings.scaleRuns, 'run')}, instances per DC ${settings.scaleInstances.join(', ')}, warm-up ${settings.scaleWarmupSeconds} s and measured ${settings.scaleSeconds} s per configuration, fixed rate ${settings.scaleRatePerDc} IDs/s per DC; ` +
        'each run visits every N, then within it tight and fixed rate, then every block policy, on a fresh sequence each. ' +
        "Claim and lost-race costs are the DC-state reads and writes timed at each instance's store; the machine's busy share is read from `os.cpus()` over the measured window.",
    );
  }
  if (raw.http !== undefined) {
    out.push(
      `- HTTP: ${plural(settings.runs, 'run')}; in each, for 1 and 100 IDs per request, the services under autocannon (${settings.httpConnections} connections each, every DC at once) and the library (${settings.httpConnections} callers per DC, every DC at once), ` +
        `each ${settings.httpWarmupSeconds} s of warm-up then ${settings.httpSeconds} s measured; ratios pair the two sides of one run. ` +
        'The bodies of the warm-ups are kept and parsed after each, every ID checked for repeats across the whole phase; the measured windows keep none, so that autocannon does no extra work per response there, and count 2xx answers × IDs per request.',
    );
  }
  out.push('');
  return out;
}
