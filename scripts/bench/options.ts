/**
 * The options of `npm run bench`: two presets (full and `--quick`), each option overriding its
 * preset, validated once.
 */
import { Command, InvalidArgumentError } from 'commander';

import { SEQUENCE_DEFAULTS } from '../../src/index.js';
import { MAX_BLOCK_SIZE } from '../../src/options.js';
import type { BenchSettings } from './results.js';

/** A full run: about 15–25 minutes on a 2-core machine that also runs the 3 Cassandra nodes. */
export const FULL_PRESET: Readonly<Omit<BenchSettings, 'out'>> = Object.freeze({
  quick: false,
  durationSeconds: 20,
  warmupSeconds: 3,
  runs: 5,
  processesPerDc: 3,
  blockSizes: Object.freeze([100, 1_000, 10_000]),
  steadyBlockSize: SEQUENCE_DEFAULTS.blockSize,
  dcRangeBlocks: 100,
  pacedBlocksPerSecond: 2,
  naiveClients: 8,
  burstFactor: 5,
  inProcessSampleMs: 300,
});

/** `--quick`: the same phases, shorter and with fewer processes; about 3–5 minutes. */
export const QUICK_PRESET: Readonly<Omit<BenchSettings, 'out'>> = Object.freeze({
  ...FULL_PRESET,
  quick: true,
  durationSeconds: 5,
  warmupSeconds: 2,
  runs: 3,
  processesPerDc: 2,
  inProcessSampleMs: 100,
});

export const DEFAULT_OUT = 'bench';

function number(min: number, max: number, integer: boolean) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      throw new InvalidArgumentError(
        `expected ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got "${value}"`,
      );
    }
    return n;
  };
}

function blockSizeList(value: string): number[] {
  const sizes = value.split(',').map((part) => part.trim());
  const parsed = sizes.map((part) => Number(part.replace(/_/g, '')));
  if (
    sizes.length === 0 ||
    parsed.some((n) => !Number.isInteger(n) || n < 1 || n > MAX_BLOCK_SIZE) ||
    new Set(parsed).size !== parsed.length
  ) {
    throw new InvalidArgumentError(
      `expected distinct integers from 1 to ${MAX_BLOCK_SIZE} separated by commas, e.g. 100,1000,10000; got "${value}"`,
    );
  }
  return parsed.sort((a, b) => a - b);
}

interface Flags {
  quick?: boolean;
  duration?: number;
  warmup?: number;
  runs?: number;
  processesPerDc?: number;
  blockSizes?: number[];
  pacedBlocksPerSecond?: number;
  naiveClients?: number;
  burstFactor?: number;
  out: string;
}

/** The command line parser; `parseBenchArgs` is the one way to use it. */
function program(): Command {
  return new Command('bench')
    .description(
      'Benchmark idgen-cass: in-process cost of an ID against other generators, then throughput, latency, LWTs and waits on the local 3-DC cluster. Prints a table and writes results.json and REPORT.md.',
    )
    .option('--quick', 'short runs with fewer processes (about 3–5 minutes)')
    .option(
      '--duration <s>',
      `measured seconds per run of each cluster phase (full ${FULL_PRESET.durationSeconds}, quick ${QUICK_PRESET.durationSeconds})`,
      number(0.5, 3_600, false),
    )
    .option(
      '--warmup <s>',
      `seconds each allocator process draws before measuring (full ${FULL_PRESET.warmupSeconds}, quick ${QUICK_PRESET.warmupSeconds})`,
      number(0, 600, false),
    )
    .option(
      '--runs <n>',
      `runs of every measurement; figures are their median (full ${FULL_PRESET.runs}, quick ${QUICK_PRESET.runs})`,
      number(1, 100, true),
    )
    .option(
      '--processes-per-dc <n>',
      `allocator processes per DC (full ${FULL_PRESET.processesPerDc}, quick ${QUICK_PRESET.processesPerDc})`,
      number(1, 32, true),
    )
    .option(
      '--block-sizes <list>',
      `block sizes of the sweep, comma separated (default ${FULL_PRESET.blockSizes.join(',')}); steady state and burst use ${SEQUENCE_DEFAULTS.blockSize} if listed, else the first`,
      blockSizeList,
    )
    .option(
      '--paced-blocks-per-second <x>',
      `paced mode: blocks each process draws per second (default ${FULL_PRESET.pacedBlocksPerSecond})`,
      number(0.01, 1_000, false),
    )
    .option(
      '--naive-clients <n>',
      `concurrent clients of the naive one-LWT-per-ID baseline (default ${FULL_PRESET.naiveClients})`,
      number(2, 256, true),
    )
    .option(
      '--burst-factor <n>',
      `burst size in blocks (default ${FULL_PRESET.burstFactor})`,
      number(1, 100, true),
    )
    .option('--out <dir>', 'directory for results.json and REPORT.md (default bench)', DEFAULT_OUT)
    .showHelpAfterError();
}

/**
 * Parses `argv` (without node and the script) into settings. Prints usage and exits the
 * process on a bad option, naming it.
 */
export async function parseBenchArgs(argv: readonly string[]): Promise<BenchSettings> {
  const command = program();
  await command.parseAsync([...argv], { from: 'user' });
  const flags = command.opts<Flags>();
  return resolveSettings(flags);
}

/** Fills the preset's defaults in; exported for tests. */
export function resolveSettings(flags: Flags): BenchSettings {
  const preset = flags.quick === true ? QUICK_PRESET : FULL_PRESET;
  const blockSizes = flags.blockSizes ?? [...preset.blockSizes];
  const steadyBlockSize = blockSizes.includes(SEQUENCE_DEFAULTS.blockSize)
    ? SEQUENCE_DEFAULTS.blockSize
    : blockSizes[0]!;
  return Object.freeze({
    ...preset,
    durationSeconds: flags.duration ?? preset.durationSeconds,
    warmupSeconds: flags.warmup ?? preset.warmupSeconds,
    runs: flags.runs ?? preset.runs,
    processesPerDc: flags.processesPerDc ?? preset.processesPerDc,
    blockSizes: Object.freeze(blockSizes),
    steadyBlockSize,
    pacedBlocksPerSecond: flags.pacedBlocksPerSecond ?? preset.pacedBlocksPerSecond,
    naiveClients: flags.naiveClients ?? preset.naiveClients,
    burstFactor: flags.burstFactor ?? preset.burstFactor,
    out: flags.out,
  });
}
