/**
 * The options of `npm run bench`: two presets (full and `--quick`), each option overriding its
 * preset, validated once.
 */
import { Command, InvalidArgumentError, Option } from 'commander';

import { SEQUENCE_DEFAULTS } from '../../src/index.js';
import { MAX_BLOCK_SIZE } from '../../src/settings/model.js';
import type { BenchSettings } from './results.js';
import { DEFAULT_SCALE_VARIANTS, SCALE_VARIANTS } from './scale-variants.js';

/**
 * A full run: about 15–25 minutes for sections 1–3 on a 2-core machine that also runs the
 * Cassandra nodes, about 12 more for the scale phase (estimated: 24 configurations × 14 s
 * × 2 runs), and about 5 more for the HTTP phase (5 runs × 2 counts × 2 sides × 13 s, and the
 * services' start).
 */
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
  scale: true,
  scaleOnly: false,
  scaleInstances: Object.freeze([1, 4, 16, 64]),
  scaleSeconds: 8,
  scaleWarmupSeconds: 4,
  scaleRuns: 2,
  scaleRatePerDc: 10_000,
  scaleVariants: DEFAULT_SCALE_VARIANTS,
  http: true,
  httpOnly: false,
  httpSeconds: 10,
  httpWarmupSeconds: 2,
  httpConnections: 10,
});

/**
 * `--quick`: the same phases, shorter and with fewer processes; about 3–5 minutes, about 2 more
 * for the scale phase (estimated: 18 configurations × 7 s) and about 1.5 more for the HTTP phase
 * (3 runs × 2 counts × 2 sides × 5 s, and the services' start).
 */
export const QUICK_PRESET: Readonly<Omit<BenchSettings, 'out'>> = Object.freeze({
  ...FULL_PRESET,
  quick: true,
  durationSeconds: 5,
  warmupSeconds: 2,
  runs: 3,
  processesPerDc: 2,
  inProcessSampleMs: 100,
  scaleInstances: Object.freeze([1, 4, 16]),
  scaleSeconds: 3,
  scaleWarmupSeconds: 2,
  scaleRuns: 1,
  httpSeconds: 3,
  httpWarmupSeconds: 1,
});

export const DEFAULT_OUT = 'bench';
/** Where `--scale-only` writes unless told: not over the committed full report (git ignores it). */
export const SCALE_ONLY_OUT = 'bench/tmp/scale-only';
/** Where `--http-only` writes unless told, for the same reason. */
export const HTTP_ONLY_OUT = 'bench/tmp/http-only';

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

function instanceList(value: string): number[] {
  const parsed = value.split(',').map((part) => Number(part.trim()));
  if (
    parsed.some((n) => !Number.isInteger(n) || n < 1 || n > MAX_SCALE_INSTANCES) ||
    new Set(parsed).size !== parsed.length
  ) {
    throw new InvalidArgumentError(
      `expected distinct integers from 1 to ${MAX_SCALE_INSTANCES} separated by commas, e.g. 1,4,16,64; got "${value}"`,
    );
  }
  return parsed.sort((a, b) => a - b);
}

function variantList(value: string): string[] {
  const keys = value.split(',').map((part) => part.trim());
  const known = SCALE_VARIANTS.map((v) => v.key);
  if (keys.some((k) => !known.includes(k)) || new Set(keys).size !== keys.length) {
    throw new InvalidArgumentError(
      `expected distinct block policies from ${known.join(', ')} separated by commas; got "${value}"`,
    );
  }
  return known.filter((k) => keys.includes(k));
}

/** Instances per DC the scale phase accepts: all of them share this machine's cores. */
export const MAX_SCALE_INSTANCES = 256;

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
  /** commander's negated `--no-scale`: false when given. */
  scale: boolean;
  scaleOnly?: boolean;
  scaleInstances?: number[];
  scaleSeconds?: number;
  scaleWarmup?: number;
  scaleRuns?: number;
  scaleRate?: number;
  scaleVariants?: string[];
  /** commander's negated `--no-http`: false when given. */
  http: boolean;
  httpOnly?: boolean;
  httpSeconds?: number;
  httpConnections?: number;
  out?: string;
}

/** The command line parser; `parseBenchArgs` is the way to use it (exported for tests). */
export function program(): Command {
  return new Command('bench')
    .description(
      'Benchmark idgen-cass: in-process cost of an ID against other generators, then throughput, latency, LWTs and waits on the local 3-DC cluster, and the HTTP service (one per DC) under load beside the library. Prints a table and writes results.json and REPORT.md.',
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
    .option(
      '--no-scale',
      'skip the scale phase (N allocator instances per DC, fixed against adaptive blocks)',
    )
    .option(
      '--scale-only',
      'run only the in-process phase (for the ratio) and the scale phase; skip naive, sweep, burst and cold start',
    )
    .option(
      '--scale-instances <list>',
      `allocator instances per DC the scale phase tries, comma separated (full ${FULL_PRESET.scaleInstances.join(',')}, quick ${QUICK_PRESET.scaleInstances.join(',')})`,
      instanceList,
    )
    .option(
      '--scale-seconds <s>',
      `measured seconds of each scale configuration (full ${FULL_PRESET.scaleSeconds}, quick ${QUICK_PRESET.scaleSeconds})`,
      number(0.5, 3_600, false),
    )
    .option(
      '--scale-warmup <s>',
      `seconds each instance draws before measuring, for adaptive blocks to settle (full ${FULL_PRESET.scaleWarmupSeconds}, quick ${QUICK_PRESET.scaleWarmupSeconds})`,
      number(0, 600, false),
    )
    .option(
      '--scale-runs <n>',
      `runs of the scale phase (full ${FULL_PRESET.scaleRuns}, quick ${QUICK_PRESET.scaleRuns})`,
      number(1, 100, true),
    )
    .option(
      '--scale-rate <ids/s>',
      `fixed-rate mode: IDs per second of each DC, split evenly over its instances (default ${FULL_PRESET.scaleRatePerDc})`,
      number(1, 10_000_000, false),
    )
    .option(
      '--scale-variants <list>',
      `block policies the scale phase compares, comma separated, from ${SCALE_VARIANTS.map((v) => v.key).join(', ')} (default ${DEFAULT_SCALE_VARIANTS.join(',')})`,
      variantList,
    )
    .addOption(
      new Option(
        '--no-http',
        'skip the HTTP phase (one idgen-cass serve per DC under autocannon, beside the library in this process)',
      ),
    )
    .addOption(
      new Option(
        '--http-only',
        'run only the in-process phase and the HTTP phase; skip naive, sweep, burst, cold start and scale',
      ).conflicts(['scaleOnly', 'http']),
    )
    .option(
      // Whole seconds: autocannon stops at the first whole second past its duration.
      '--http-seconds <s>',
      `measured seconds of each load of the HTTP phase, per count and side (full ${FULL_PRESET.httpSeconds}, quick ${QUICK_PRESET.httpSeconds}; each after ${FULL_PRESET.httpWarmupSeconds} s, quick ${QUICK_PRESET.httpWarmupSeconds} s, of warm-up)`,
      number(1, 3_600, true),
    )
    .option(
      '--http-connections <n>',
      `autocannon connections per service, and concurrent library callers per DC (default ${FULL_PRESET.httpConnections})`,
      number(1, 1_000, true),
    )
    .option(
      '--out <dir>',
      `directory for results.json and REPORT.md (default ${DEFAULT_OUT}; with --scale-only ${SCALE_ONLY_OUT}, with --http-only ${HTTP_ONLY_OUT})`,
    )
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
    scale: (flags.scale || flags.scaleOnly === true) && flags.httpOnly !== true,
    scaleOnly: flags.scaleOnly === true,
    scaleInstances: Object.freeze(flags.scaleInstances ?? [...preset.scaleInstances]),
    scaleSeconds: flags.scaleSeconds ?? preset.scaleSeconds,
    scaleWarmupSeconds: flags.scaleWarmup ?? preset.scaleWarmupSeconds,
    scaleRuns: flags.scaleRuns ?? preset.scaleRuns,
    scaleRatePerDc: flags.scaleRate ?? preset.scaleRatePerDc,
    scaleVariants: Object.freeze(flags.scaleVariants ?? [...preset.scaleVariants]),
    http: (flags.http || flags.httpOnly === true) && flags.scaleOnly !== true,
    httpOnly: flags.httpOnly === true,
    httpSeconds: flags.httpSeconds ?? preset.httpSeconds,
    httpConnections: flags.httpConnections ?? preset.httpConnections,
    out:
      flags.out ??
      (flags.scaleOnly === true
        ? SCALE_ONLY_OUT
        : flags.httpOnly === true
          ? HTTP_ONLY_OUT
          : DEFAULT_OUT),
  });
}
