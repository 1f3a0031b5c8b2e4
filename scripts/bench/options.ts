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

/** Distinct integers from 1 to `max`, comma separated (`_` allowed in each), sorted. */
function integerList(max: number, example: string) {
  return (value: string): number[] => {
    const parsed = value.split(',').map((part) => Number(part.trim().replace(/_/g, '')));
    if (
      parsed.some((n) => !Number.isInteger(n) || n < 1 || n > max) ||
      new Set(parsed).size !== parsed.length
    ) {
      throw new InvalidArgumentError(
        `expected distinct integers from 1 to ${max} separated by commas, e.g. ${example}; got "${value}"`,
      );
    }
    return parsed.sort((a, b) => a - b);
  };
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

type Preset = Omit<BenchSettings, 'out'>;

/** "full 20, quick 5", or "default 2" where the presets agree. */
function presets(key: keyof Preset): string {
  const text = (preset: Preset) => String(preset[key]);
  const [full, quick] = [text(FULL_PRESET), text(QUICK_PRESET)];
  return full === quick ? `default ${full}` : `full ${full}, quick ${quick}`;
}

/**
 * Each option that overrides a setting: commander's name for it and the setting's key. The
 * others (`--quick`, `--no-scale`, `--scale-only`, `--no-http`, `--http-only`, `--out`) choose
 * the preset, the phases and the directory.
 */
const OVERRIDES = {
  duration: 'durationSeconds',
  warmup: 'warmupSeconds',
  runs: 'runs',
  processesPerDc: 'processesPerDc',
  blockSizes: 'blockSizes',
  pacedBlocksPerSecond: 'pacedBlocksPerSecond',
  naiveClients: 'naiveClients',
  burstFactor: 'burstFactor',
  scaleInstances: 'scaleInstances',
  scaleSeconds: 'scaleSeconds',
  scaleWarmup: 'scaleWarmupSeconds',
  scaleRuns: 'scaleRuns',
  scaleRate: 'scaleRatePerDc',
  scaleVariants: 'scaleVariants',
  httpSeconds: 'httpSeconds',
  httpConnections: 'httpConnections',
} as const satisfies Record<string, keyof Preset>;

type Flags = {
  quick?: boolean;
  /** commander's negated `--no-scale`: false when given. */
  scale: boolean;
  scaleOnly?: boolean;
  /** commander's negated `--no-http`: false when given. */
  http: boolean;
  httpOnly?: boolean;
  out?: string;
} & { [F in keyof typeof OVERRIDES]?: Preset[(typeof OVERRIDES)[F]] };

/** The command line parser; `parseBenchArgs` is the way to use it (exported for tests). */
export function program(): Command {
  return new Command('bench')
    .description(
      'Benchmark idgen-cass: in-process cost of an ID against other generators, then throughput, latency, LWTs and waits on the local 3-DC cluster, and the HTTP service (one per DC) under load beside the library. Prints a table and writes results.json and REPORT.md.',
    )
    .option('--quick', 'short runs with fewer processes (about 3–5 minutes)')
    .option(
      '--duration <s>',
      `measured seconds per run of each cluster phase (${presets('durationSeconds')})`,
      number(0.5, 3_600, false),
    )
    .option(
      '--warmup <s>',
      `seconds each allocator process draws before measuring (${presets('warmupSeconds')})`,
      number(0, 600, false),
    )
    .option(
      '--runs <n>',
      `runs of every measurement; figures are their median (${presets('runs')})`,
      number(1, 100, true),
    )
    .option(
      '--processes-per-dc <n>',
      `allocator processes per DC (${presets('processesPerDc')})`,
      number(1, 32, true),
    )
    .option(
      '--block-sizes <list>',
      `block sizes of the sweep, comma separated (${presets('blockSizes')}); steady state and burst use ${SEQUENCE_DEFAULTS.blockSize} if listed, else the first`,
      integerList(MAX_BLOCK_SIZE, '100,1000,10000'),
    )
    .option(
      '--paced-blocks-per-second <x>',
      `paced mode: blocks each process draws per second (${presets('pacedBlocksPerSecond')})`,
      number(0.01, 1_000, false),
    )
    .option(
      '--naive-clients <n>',
      `concurrent clients of the naive one-LWT-per-ID baseline (${presets('naiveClients')})`,
      number(2, 256, true),
    )
    .option(
      '--burst-factor <n>',
      `burst size in blocks (${presets('burstFactor')})`,
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
      `allocator instances per DC the scale phase tries, comma separated (${presets('scaleInstances')})`,
      integerList(MAX_SCALE_INSTANCES, '1,4,16,64'),
    )
    .option(
      '--scale-seconds <s>',
      `measured seconds of each scale configuration (${presets('scaleSeconds')})`,
      number(0.5, 3_600, false),
    )
    .option(
      '--scale-warmup <s>',
      `seconds each instance draws before measuring, for adaptive blocks to settle (${presets('scaleWarmupSeconds')})`,
      number(0, 600, false),
    )
    .option(
      '--scale-runs <n>',
      `runs of the scale phase (${presets('scaleRuns')})`,
      number(1, 100, true),
    )
    .option(
      '--scale-rate <ids/s>',
      `fixed-rate mode: IDs per second of each DC, split evenly over its instances (${presets('scaleRatePerDc')})`,
      number(1, 10_000_000, false),
    )
    .option(
      '--scale-variants <list>',
      `block policies the scale phase compares, comma separated, from ${SCALE_VARIANTS.map((v) => v.key).join(', ')} (${presets('scaleVariants')})`,
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
      `measured seconds of each load of the HTTP phase, per count and side (${presets('httpSeconds')}; each after ${FULL_PRESET.httpWarmupSeconds} s, quick ${QUICK_PRESET.httpWarmupSeconds} s, of warm-up)`,
      number(1, 3_600, true),
    )
    .option(
      '--http-connections <n>',
      `autocannon connections per service, and concurrent library callers per DC (${presets('httpConnections')})`,
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
  return resolveSettings(command.opts<Flags>());
}

/** Fills the preset's defaults in; exported for tests. */
export function resolveSettings(flags: Flags): BenchSettings {
  const preset = flags.quick === true ? QUICK_PRESET : FULL_PRESET;
  const settings: Record<string, unknown> = { ...preset };
  for (const [flag, key] of Object.entries(OVERRIDES)) {
    const value = flags[flag as keyof typeof OVERRIDES];
    if (value !== undefined) settings[key] = Array.isArray(value) ? Object.freeze(value) : value;
  }
  const blockSizes = settings['blockSizes'] as readonly number[];
  const scaleOnly = flags.scaleOnly === true;
  const httpOnly = flags.httpOnly === true;
  return Object.freeze({
    ...(settings as Preset),
    steadyBlockSize: blockSizes.includes(SEQUENCE_DEFAULTS.blockSize)
      ? SEQUENCE_DEFAULTS.blockSize
      : blockSizes[0]!,
    scale: (flags.scale || scaleOnly) && !httpOnly,
    scaleOnly,
    http: (flags.http || httpOnly) && !scaleOnly,
    httpOnly,
    out: flags.out ?? (scaleOnly ? SCALE_ONLY_OUT : httpOnly ? HTTP_ONLY_OUT : DEFAULT_OUT),
  });
}
