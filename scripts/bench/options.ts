/** The options of `npm run bench`: two presets (full and `--quick`), each option overriding one. */
import { Command, InvalidArgumentError, Option } from 'commander';

import { SEQUENCE_DEFAULTS } from '../../src/index.js';
import { MAX_BLOCK_SIZE } from '../../src/settings/model.js';
import type { BenchSettings } from './results.js';

type Preset = Omit<BenchSettings, 'out'>;

export const FULL_PRESET: Readonly<Preset> = Object.freeze({
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
  http: true,
  httpOnly: false,
  httpSeconds: 10,
  httpWarmupSeconds: 2,
  httpConnections: 10,
});

/** `--quick`: the same phases, shorter and with fewer processes. */
export const QUICK_PRESET: Readonly<Preset> = Object.freeze({
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
/** Where `--scale-only` and `--http-only` write unless told: not over the committed report. */
export const SCALE_ONLY_OUT = 'bench/tmp/scale-only';
export const HTTP_ONLY_OUT = 'bench/tmp/http-only';
/** Instances per DC the scale phase accepts: all of them share this machine's cores. */
export const MAX_SCALE_INSTANCES = 256;

/** A number from `min` to `max`; `integer`: whole. */
function number(min: number, max: number, integer = true) {
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

const SECONDS = number(0.5, 3_600, false);
const WARMUP = number(0, 600, false);
const RUNS = number(1, 100);

/**
 * The options that override a preset's setting, in the order of `--help`, which adds the
 * presets' values: "(full 20, quick 5)", or "(default 2)" where they agree.
 */
const OVERRIDES: readonly (readonly [string, keyof Preset, string, (v: string) => unknown])[] = [
  ['--duration <s>', 'durationSeconds', 'measured seconds per cluster run', SECONDS],
  ['--warmup <s>', 'warmupSeconds', 'seconds each process draws before measuring', WARMUP],
  ['--runs <n>', 'runs', 'runs of every measurement; figures are their median', RUNS],
  ['--processes-per-dc <n>', 'processesPerDc', 'allocator processes per DC', number(1, 32)],
  [
    '--block-sizes <list>',
    'blockSizes',
    `block sizes of the sweep, comma separated; steady state and burst use ${SEQUENCE_DEFAULTS.blockSize} if listed, else the first`,
    integerList(MAX_BLOCK_SIZE, '100,1000,10000'),
  ],
  [
    '--paced-blocks-per-second <x>',
    'pacedBlocksPerSecond',
    'paced mode: blocks each process draws per second',
    number(0.01, 1_000, false),
  ],
  [
    '--naive-clients <n>',
    'naiveClients',
    'concurrent clients of the naive one-LWT-per-ID baseline',
    number(2, 256),
  ],
  ['--burst-factor <n>', 'burstFactor', 'burst size in blocks', number(1, 100)],
  [
    '--scale-instances <list>',
    'scaleInstances',
    'allocator instances per DC the scale phase tries, comma separated',
    integerList(MAX_SCALE_INSTANCES, '1,4,16,64'),
  ],
  ['--scale-seconds <s>', 'scaleSeconds', 'measured seconds of each scale configuration', SECONDS],
  [
    '--scale-warmup <s>',
    'scaleWarmupSeconds',
    'seconds each scale instance draws before measuring',
    WARMUP,
  ],
  ['--scale-runs <n>', 'scaleRuns', 'runs of the scale phase', RUNS],
  [
    '--scale-rate <ids/s>',
    'scaleRatePerDc',
    'scale, fixed-rate mode: IDs per second of each DC',
    number(1, 1e7, false),
  ],
  // Whole seconds: autocannon stops at the first whole second past its duration.
  [
    '--http-seconds <s>',
    'httpSeconds',
    'measured seconds of each HTTP load, per count and side',
    number(1, 3_600),
  ],
  [
    '--http-connections <n>',
    'httpConnections',
    'autocannon connections per service, and library callers per DC',
    number(1, 1_000),
  ],
];

type Flags = {
  quick?: boolean;
  /** False when `--no-scale` is given; `http` likewise. */
  scale: boolean;
  scaleOnly?: boolean;
  http: boolean;
  httpOnly?: boolean;
  out?: string;
} & { readonly [attribute: string]: unknown };

/** The command line parser; `parseBenchArgs` is the way to use it (exported for tests). */
export function program(): Command {
  const command = new Command('bench')
    .description(
      'Benchmark idgen-cass: in-process cost of an ID against other generators, then throughput, latency, LWTs and waits on the local 3-DC cluster, N allocator instances per DC, and the HTTP service (one per DC) under load beside the library. Writes results.json and REPORT.md.',
    )
    .option('--quick', 'short runs with fewer processes');
  for (const [flags, key, help, parse] of OVERRIDES) {
    const [full, quick] = [String(FULL_PRESET[key]), String(QUICK_PRESET[key])];
    const presets = full === quick ? `default ${full}` : `full ${full}, quick ${quick}`;
    command.addOption(new Option(flags, `${help} (${presets})`).argParser(parse));
  }
  return command
    .option('--no-scale', 'skip the scale phase (N allocator instances per DC)')
    .option('--scale-only', 'run only the in-process and the scale phases')
    .option(
      '--no-http',
      'skip the HTTP phase (one idgen-cass serve per DC under autocannon, then one more overloaded)',
    )
    .addOption(
      new Option('--http-only', 'run only the in-process and the HTTP phases').conflicts([
        'scaleOnly',
        'http',
      ]),
    )
    .option(
      '--out <dir>',
      `directory for results.json and REPORT.md (default ${DEFAULT_OUT}; with --scale-only ${SCALE_ONLY_OUT}, with --http-only ${HTTP_ONLY_OUT})`,
    )
    .showHelpAfterError();
}

/** Parses `argv` (without node and the script); prints usage and exits on a bad option. */
export async function parseBenchArgs(argv: readonly string[]): Promise<BenchSettings> {
  const command = program();
  await command.parseAsync([...argv], { from: 'user' });
  return resolveSettings(command.opts<Flags>());
}

/** Fills the preset's defaults in; exported for tests. */
export function resolveSettings(flags: Flags): BenchSettings {
  const settings: Record<string, unknown> = {
    ...(flags.quick === true ? QUICK_PRESET : FULL_PRESET),
  };
  for (const [flag, key] of OVERRIDES) {
    const value = flags[new Option(flag).attributeName()];
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
