import { describe, expect, it } from 'vitest';

import { InvalidNameError, InvalidOptionError, InvariantError } from '../../src/errors.js';
import { validateName } from '../../src/options.js';
import { SEQUENCE_DEFAULTS } from '../../src/settings/defaults.js';
import { defaultFirstRanges, resolveFirstGrants } from '../../src/settings/first-ranges.js';
import {
  DOMAIN_MAX,
  MAX_BLOCK_SIZE,
  MAX_INT63,
  type AlterSequenceOptions,
  type CreateSequenceOptions,
} from '../../src/settings/model.js';
import {
  checkChanges,
  resolveSequenceSettings,
  validateChanges,
  validateStoredSettings,
} from '../../src/settings/resolve.js';
import { RULES } from '../../src/settings/rules.js';
import type { SequenceSettings } from '../../src/store/port.js';

describe('resolveSequenceSettings', () => {
  it('fills in frozen defaults: int32, min 1, start = min', () => {
    const settings = resolveSequenceSettings('orders');
    expect(settings).toEqual({
      name: 'orders',
      domain: 'int32',
      min: 1n,
      max: 2n ** 31n - 1n,
      start: 1n,
      dcRangeSize: 100_000n,
      blockSize: 1_000,
      threshold: 0.5,
      // New sequences adapt their blocks (within [blockSize, maxBlockSize]); no autonomy target.
      maxBlockSize: 100_000,
      claimIntervalMs: 2_000,
      // Adaptive blocks up to 100,000 without a target: room for 8 of them per grant.
      maxDcRangeSize: 800_000n,
      autonomySeconds: 0,
      // Adaptive blocks in a domain of 21,474 DC ranges: 16 state partitions per DC.
      shards: 16,
    });
    expect(Object.isFrozen(settings)).toBe(true);
    expect(Object.isFrozen(SEQUENCE_DEFAULTS)).toBe(true);
    expect(Object.isFrozen(DOMAIN_MAX)).toBe(true);
  });

  it.each([
    ['safe53', { domain: 'safe53' }],
    ['int63', { domain: 'int63' }],
    ['a custom domain of exactly 2^48 IDs', { min: 0, max: 2n ** 48n - 1n }],
    ['an autonomy target in safe53', { domain: 'safe53', autonomySeconds: 60 }],
  ] as const)(
    'gives adaptive blocks in a domain of 2^48 IDs or more DC ranges and blocks up to 10,000,000: %s',
    (_, options) => {
      const settings = resolveSequenceSettings('s', options);
      expect(settings).toMatchObject({
        dcRangeSize: 10_000_000n,
        blockSize: 1_000,
        maxBlockSize: MAX_BLOCK_SIZE,
        shards: 16,
      });
      // Without a target a grant holds 8 of the largest blocks; with one, 1,000 least ranges.
      expect(settings.maxDcRangeSize).toBe(
        settings.autonomySeconds > 0 ? 10_000_000_000n : 80_000_000n,
      );
    },
  );

  it.each([
    ['a custom domain of one ID fewer than 2^48', { min: 1, max: 2n ** 48n - 1n }, 100_000],
    ['fixed blocks (blockSize alone) in int63', { domain: 'int63', blockSize: 1_000 }, 1_000],
  ] as const)('keeps the small sizes for %s', (_, options, maxBlockSize) => {
    expect(resolveSequenceSettings('s', options)).toMatchObject({
      dcRangeSize: 100_000n,
      maxBlockSize,
    });
  });

  it('lets a given size in a large domain stand, and fills in the other', () => {
    expect(resolveSequenceSettings('s', { domain: 'int63', maxBlockSize: 50_000 })).toMatchObject({
      dcRangeSize: 10_000_000n,
      maxBlockSize: 50_000,
    });
    expect(resolveSequenceSettings('s', { domain: 'int63', dcRangeSize: 2_000_000 })).toMatchObject(
      { dcRangeSize: 2_000_000n, maxBlockSize: 2_000_000 },
    );
  });

  it.each([
    ['int32', 2n ** 31n - 1n],
    ['safe53', 2n ** 53n - 1n],
    ['int63', 2n ** 63n - 1n],
  ] as const)('preset %s spans [1, %s]', (domain, max) => {
    expect(resolveSequenceSettings('s', { domain })).toMatchObject({ domain, min: 1n, max });
  });

  it('records a custom domain when max is given, and accepts numbers for bigint fields', () => {
    expect(
      resolveSequenceSettings('s', {
        min: 0,
        max: 999,
        start: 10,
        dcRangeSize: 100,
        blockSize: 10,
      }),
    ).toEqual({
      name: 's',
      domain: 'custom',
      min: 0n,
      max: 999n,
      start: 10n,
      dcRangeSize: 100n,
      blockSize: 10,
      threshold: 0.5,
      // blockSize alone: fixed blocks, as before blocks could adapt.
      maxBlockSize: 10,
      claimIntervalMs: 2_000,
      maxDcRangeSize: 100n,
      autonomySeconds: 0,
      shards: 1,
    });
    expect(resolveSequenceSettings('s', { domain: 'int32', max: 2n ** 31n - 1n })).toMatchObject({
      domain: 'custom',
      max: 2n ** 31n - 1n,
    });
  });

  it('caps default sizes to a small domain, and start defaults to min', () => {
    expect(resolveSequenceSettings('s', { min: 5, max: 24 })).toMatchObject({
      start: 5n,
      dcRangeSize: 20n,
      blockSize: 20,
    });
  });

  it('accepts the largest values', () => {
    expect(
      resolveSequenceSettings('s', {
        domain: 'int63',
        start: MAX_INT63,
        dcRangeSize: MAX_INT63,
        blockSize: 10_000_000,
        threshold: 0.999,
      }),
    ).toMatchObject({ start: MAX_INT63, dcRangeSize: MAX_INT63, blockSize: 10_000_000 });
  });

  const bad: [string, CreateSequenceOptions | Record<string, unknown>, string][] = [
    ['unknown domain', { domain: 'int16' }, 'domain'],
    ['custom as a preset', { domain: 'custom' }, 'domain'],
    ['negative min', { min: -1 }, 'min'],
    ['fractional min', { min: 1.5 }, 'min'],
    ['min as a string', { min: '1' }, 'min'],
    ['min above the preset max', { domain: 'int32', min: 2 ** 31 }, 'min'],
    ['max below min', { min: 10, max: 9 }, 'max'],
    ['max above 2^63-1', { max: 2n ** 63n }, 'max'],
    ['max as an unsafe number', { max: 2 ** 60 }, 'max'],
    ['max above the given preset', { domain: 'int32', max: 2 ** 31 }, 'max'],
    ['NaN max', { max: Number.NaN }, 'max'],
    ['start below min', { min: 5, start: 4 }, 'start'],
    ['start above max', { max: 100, start: 101 }, 'start'],
    ['fractional start', { start: 2.5 }, 'start'],
    ['zero dcRangeSize', { dcRangeSize: 0 }, 'dcRangeSize'],
    ['negative dcRangeSize', { dcRangeSize: -5n }, 'dcRangeSize'],
    ['dcRangeSize beyond the domain', { max: 10, dcRangeSize: 11 }, 'dcRangeSize'],
    // [0, 2^63-1] holds 2^63 IDs, one more than a CQL bigint: the driver stored it as -2^63.
    ['dcRangeSize of 2^63', { domain: 'int63', min: 0, dcRangeSize: 2n ** 63n }, 'dcRangeSize'],
    [
      'maxDcRangeSize of 2^63',
      { domain: 'int63', min: 0, maxDcRangeSize: 2n ** 63n },
      'maxDcRangeSize',
    ],
    ['fractional dcRangeSize', { dcRangeSize: 1.2 }, 'dcRangeSize'],
    ['zero blockSize', { blockSize: 0 }, 'blockSize'],
    ['fractional blockSize', { blockSize: 1.5 }, 'blockSize'],
    ['blockSize above 10,000,000', { dcRangeSize: 10n ** 9n, blockSize: 10_000_001 }, 'blockSize'],
    ['blockSize above dcRangeSize', { dcRangeSize: 100, blockSize: 101 }, 'blockSize'],
    ['blockSize as a string', { blockSize: '10' }, 'blockSize'],
    ['blockSize as a bigint', { blockSize: 10n }, 'blockSize'],
    ['zero threshold', { threshold: 0 }, 'threshold'],
    ['threshold of 1', { threshold: 1 }, 'threshold'],
    ['negative threshold', { threshold: -0.1 }, 'threshold'],
    ['NaN threshold', { threshold: Number.NaN }, 'threshold'],
    ['threshold as a string', { threshold: '0.5' }, 'threshold'],
    ['a misspelt option', { blocksize: 10 }, 'blocksize'],
  ];

  it.each(bad)('refuses %s, naming the option', (_label, options, option) => {
    const error = catchError(() => resolveSequenceSettings('s', options as CreateSequenceOptions));
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error).toMatchObject({ code: 'IDGEN_INVALID_OPTION', option });
    expect((error as Error).message).toContain(`"${option}"`);
    expect((error as InvalidOptionError).allowed.length).toBeGreaterThan(0);
  });

  it('says what is allowed, with the numbers', () => {
    const error = catchError(() => resolveSequenceSettings('s', { max: 100, start: 101 }));
    expect((error as Error).message).toBe(
      'Invalid option "start": received 101; allowed: an integer from 1 to 100 (a number up to 2^53-1, or a bigint).',
    );
    // The API's types are the message's only: `allowed` is what any caller, the CLI too, may say.
    expect((error as InvalidOptionError).allowed).toBe('an integer from 1 to 100');
  });

  it('says why a bigint in range is refused where the option takes numbers only', () => {
    const error = catchError(() => resolveSequenceSettings('s', { blockSize: 10n } as never));
    expect((error as Error).message).toBe(
      'Invalid option "blockSize": received 10n; allowed: a number (not a bigint) from 1 to 100000 (at most dcRangeSize (100000) and 10000000).',
    );
  });

  it.each([
    ['adaptive blocks, int32, DC ranges of 100,000 (21,474 of them)', {}, 16],
    ['adaptive blocks, safe53', { domain: 'safe53' }, 16],
    ['adaptive blocks, int32, DC ranges of 200,000 (10,737 of them)', { dcRangeSize: 2e5 }, 10],
    ['adaptive blocks, int32, DC ranges of 1,000,000 (2,147 of them)', { dcRangeSize: 1e6 }, 2],
    ['adaptive blocks, int32, DC ranges of 10,000,000 (214 of them)', { dcRangeSize: 1e7 }, 1],
    ['fixed blocks (blockSize alone)', { blockSize: 100 }, 1],
    ['fixed blocks (maxBlockSize = blockSize)', { blockSize: 500, maxBlockSize: 500 }, 1],
    ['shards given', { shards: 3 }, 3],
    ['shards given, fixed blocks', { blockSize: 100, shards: 2 }, 2],
  ] as const)(
    'shards unless given: 16 with adaptive blocks, at most one per 1,000 DC ranges of the domain, 1 with fixed blocks: %s',
    (_, options, shards) => {
      expect(resolveSequenceSettings('s', options).shards).toBe(shards);
    },
  );

  it('refuses a bad name before looking at the options', () => {
    expect(() => resolveSequenceSettings('1abc', { blockSize: 0 })).toThrow(InvalidNameError);
  });
});

describe('resolveFirstGrants', () => {
  const settings = resolveSequenceSettings('orders', { max: 1_000, dcRangeSize: 100, shards: 2 });

  it('grants every shard of every DC given one DC range, contiguous from start, in order', () => {
    expect(resolveFirstGrants(settings, ['dc2', 'dc1'])).toEqual([
      { grantee: 'dc2', grant: { number: 1, min: 1n, max: 100n } },
      { grantee: 'dc2/1', grant: { number: 1, min: 101n, max: 200n } },
      { grantee: 'dc1', grant: { number: 1, min: 201n, max: 300n } },
      { grantee: 'dc1/1', grant: { number: 1, min: 301n, max: 400n } },
    ]);
    expect(resolveFirstGrants(settings, undefined)).toEqual([]);
    expect(resolveFirstGrants(settings, [])).toEqual([]);
  });

  it.each([
    ['a shard name', ['dc1/1']],
    ['an empty name', ['']],
    ['a DC named twice', ['dc1', 'dc1']],
    ['not an array', 'dc1'],
  ])('refuses %s with IDGEN_INVALID_OPTION', (_, dcs) => {
    const attempt = () => resolveFirstGrants(settings, dcs as readonly string[]);
    expect(attempt).toThrow(InvalidOptionError);
    expect(attempt).toThrow(/"firstRanges".*distinct datacenter names/);
  });

  it('refuses first ranges that do not fit the domain from start, and says by how much', () => {
    const late = resolveSequenceSettings('orders', { max: 1_000, start: 700, dcRangeSize: 100 });
    expect(() => resolveFirstGrants(late, ['dc1', 'dc2', 'dc3', 'dc4'])).toThrow(
      /4 DC\(s\) × 1 shard\(s\) × dcRangeSize 100 = 400 IDs, but only 301 lie from start 700 to max 1000/,
    );
    expect(resolveFirstGrants(late, ['dc1', 'dc2', 'dc3'])).toHaveLength(3);
  });

  it('refuses more first ranges than one batch may hold (DCs × shards above 64)', () => {
    const many = resolveSequenceSettings('orders', { dcRangeSize: 100, shards: 22 });
    expect(resolveFirstGrants(many, ['dc1', 'dc2'])).toHaveLength(44);
    expect(() => resolveFirstGrants(many, ['dc1', 'dc2', 'dc3'])).toThrow(
      /at most 64 .* 3 DC\(s\) × 22 shard\(s\) = 66/,
    );
  });
});

describe('defaultFirstRanges', () => {
  const dcs = ['dc1', 'dc2', 'dc3'];

  it('grants every DC of the keyspace its first ranges when blocks adapt', () => {
    const settings = resolveSequenceSettings('orders');
    expect(defaultFirstRanges(settings, dcs)).toEqual(dcs);
    expect(resolveFirstGrants(settings, defaultFirstRanges(settings, dcs))).toHaveLength(48);
  });

  it.each([
    ['fixed blocks', { blockSize: 100 }, dcs],
    ['a keyspace that names no DC (SimpleStrategy)', {}, undefined],
    ['a keyspace with no DC', {}, []],
    ['a DC whose name the protocol cannot use', {}, ['dc1', 'dc 2']],
    [
      'more ranges than one batch holds (5 DCs × 16 shards)',
      {},
      Array.from({ length: 5 }, (_, i) => `dc${i + 1}`),
    ],
    ['ranges above an eighth of the IDs from start', { start: 2n ** 31n - 1n - 38_399_998n }, dcs],
  ] as const)('grants none with %s', (_, options, replicaDcs) => {
    expect(defaultFirstRanges(resolveSequenceSettings('orders', options), replicaDcs)).toBe(
      undefined,
    );
  });

  it('grants them where they take an eighth of the IDs from start, no more', () => {
    // 48 ranges of 100,000: 4,800,000 IDs, an eighth of 38,400,000.
    const start = 2n ** 31n - 1n - 38_400_000n + 1n;
    expect(defaultFirstRanges(resolveSequenceSettings('orders', { start }), dcs)).toEqual(dcs);
  });
});

describe('validateName', () => {
  it.each(['a', 'orders', 'Orders_2024', 'x'.repeat(48)])('accepts %s', (name) => {
    expect(() => validateName('sequence', name)).not.toThrow();
  });

  it.each(['', '1abc', '_x', 'a-b', 'a b', 'x'.repeat(49), 'é', 42, undefined])(
    'refuses %s with IDGEN_INVALID_NAME',
    (name) => {
      const error = catchError(() => validateName('sequence', name));
      expect(error).toBeInstanceOf(InvalidNameError);
      expect(error).toMatchObject({ code: 'IDGEN_INVALID_NAME', kind: 'sequence', received: name });
    },
  );
});

describe('validateChanges', () => {
  const current = resolveSequenceSettings('s', {
    max: 1_000_000,
    dcRangeSize: 1_000,
    blockSize: 100,
  });

  // Behaviour changed: fixed sizes move with their bound, so a change may name one more key.
  it('normalises the changes given, and those that change with them', () => {
    const changes = validateChanges({ dcRangeSize: 5_000, threshold: 0.25 }, current);
    expect(changes).toEqual({ dcRangeSize: 5_000n, threshold: 0.25, maxDcRangeSize: 5_000n });
    expect(Object.keys(changes)).toEqual(['dcRangeSize', 'threshold', 'maxDcRangeSize']);
    expect(validateChanges({ blockSize: 1_000 }, current)).toEqual({
      blockSize: 1_000,
      maxBlockSize: 1_000,
    });
    // Both together: the new block size is checked against the new DC range size.
    expect(validateChanges({ dcRangeSize: 50, blockSize: 50 }, current)).toEqual({
      dcRangeSize: 50n,
      blockSize: 50,
      maxBlockSize: 50,
      maxDcRangeSize: 50n,
    });
  });

  it('turns fixed blocks adaptive with maxBlockSize, and an autonomy target on with autonomySeconds', () => {
    expect(validateChanges({ maxBlockSize: 1_000, claimIntervalMs: 5_000 }, current)).toEqual({
      maxBlockSize: 1_000,
      claimIntervalMs: 5_000,
    });
    expect(validateChanges({ autonomySeconds: 86_400 }, current)).toEqual({
      autonomySeconds: 86_400,
      maxDcRangeSize: 125_000n, // an eighth of the domain (1000 DC ranges would be more)
    });
    expect(validateChanges({ autonomySeconds: 3_600, maxDcRangeSize: 20_000 }, current)).toEqual({
      autonomySeconds: 3_600,
      maxDcRangeSize: 20_000n,
    });
  });

  it('raises the number of shards, and refuses to lower it: processes keep the shard they picked', () => {
    expect(validateChanges({ shards: 4 }, current)).toEqual({ shards: 4 });
    const sharded = { ...current, shards: 4 };
    expect(validateChanges({ shards: 4 }, sharded)).toEqual({ shards: 4 });
    const error = catchError(() => validateChanges({ shards: 2 }, sharded));
    expect(error).toMatchObject({ code: 'IDGEN_INVALID_OPTION', option: 'shards' });
    expect((error as Error).message).toContain(
      'the sequence has 4 shards and their number only grows',
    );
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ['no change', {}, 'changes'],
    ['only undefined values', { blockSize: undefined }, 'changes'],
    ['an unchangeable setting', { max: 5 }, 'max'],
    ['start', { start: 5 }, 'start'],
    ['a block size above the DC range size', { blockSize: 1_001 }, 'blockSize'],
    ['a DC range size below the block size', { dcRangeSize: 99 }, 'dcRangeSize'],
    ['a DC range size beyond the domain', { dcRangeSize: 1_000_001 }, 'dcRangeSize'],
    ['a threshold of 1', { threshold: 1 }, 'threshold'],
    ['a largest block above the DC range size', { maxBlockSize: 1_001 }, 'maxBlockSize'],
    ['a block size above the largest block', { maxBlockSize: 500, blockSize: 600 }, 'blockSize'],
    ['a claim interval under 10 ms', { claimIntervalMs: 5 }, 'claimIntervalMs'],
    ['a negative autonomy target', { autonomySeconds: -1 }, 'autonomySeconds'],
    ['a largest DC range below the DC range size', { maxDcRangeSize: 999 }, 'maxDcRangeSize'],
    ['no shards', { shards: 0 }, 'shards'],
    ['more than 256 shards', { shards: 257 }, 'shards'],
    ['a fraction of a shard', { shards: 1.5 }, 'shards'],
  ];

  it('refuses a DC range size of 2^63 for the domain [0, 2^63-1], which a CQL bigint cannot hold', () => {
    const whole = resolveSequenceSettings('w', { domain: 'int63', min: 0 });
    for (const changes of [{ dcRangeSize: 2n ** 63n }, { maxDcRangeSize: 2n ** 63n }]) {
      const error = catchError(() => validateChanges(changes, whole));
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect((error as InvalidOptionError).option).toBe(Object.keys(changes)[0]);
    }
    expect(validateChanges({ maxDcRangeSize: MAX_INT63 }, whole)).toMatchObject({
      maxDcRangeSize: MAX_INT63,
    });
  });

  it('refuses a value no stored setting makes valid before any is read, and leaves the rest to validateChanges', () => {
    for (const [changes, option] of [
      [{ threshold: 2 }, 'threshold'],
      [{ blockSize: -5 }, 'blockSize'],
      [{ maxBlockSize: MAX_BLOCK_SIZE + 1 }, 'maxBlockSize'],
      [{ dcRangeSize: 0 }, 'dcRangeSize'],
      [{ maxDcRangeSize: 2n ** 63n }, 'maxDcRangeSize'],
      [{ claimIntervalMs: 5 }, 'claimIntervalMs'],
      [{ autonomySeconds: -1 }, 'autonomySeconds'],
      [{ shards: 257 }, 'shards'],
      [{ blocksize: 10 }, 'blocksize'],
      [{}, 'changes'],
    ] as const) {
      expect(catchError(() => checkChanges(changes as AlterSequenceOptions))).toMatchObject({
        code: 'IDGEN_INVALID_OPTION',
        option,
      });
    }
    // Valid alone; refused only against these settings (a block above the DC range).
    expect(() => checkChanges({ blockSize: 1_001, shards: 1 })).not.toThrow();
    expect(catchError(() => validateChanges({ blockSize: 1_001 }, current))).toMatchObject({
      option: 'blockSize',
    });
  });

  it.each(bad)('refuses %s, naming the option', (_label, changes, option) => {
    const error = catchError(() => validateChanges(changes as AlterSequenceOptions, current));
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error).toMatchObject({ code: 'IDGEN_INVALID_OPTION', option });
    expect((error as Error).message).toContain(`"${option}"`);
  });
});

/** The domain [0, 2^63-1]: 2^63 IDs, one more than a CQL bigint holds. */
const WHOLE_INT63 = { domain: 'int63', min: 0n, start: 0n, max: MAX_INT63 } as const;

describe('validateStoredSettings', () => {
  const good: SequenceSettings = resolveSequenceSettings('s', {
    domain: 'int32',
    dcRangeSize: 1_000,
    blockSize: 100,
  });

  it('accepts settings created by resolveSequenceSettings', () => {
    expect(() => validateStoredSettings(good)).not.toThrow();
    expect(() =>
      validateStoredSettings(resolveSequenceSettings('t', { min: 0, max: 0 })),
    ).not.toThrow();
  });

  it.each<[string, Partial<SequenceSettings>]>([
    ['min above max', { min: 10n, max: 5n, start: 10n }],
    ['negative min', { min: -1n }],
    ['start below min', { start: 0n }],
    ['start above max', { start: 2n ** 31n }],
    ['max beyond its domain', { max: 2n ** 31n }],
    ['max beyond 2^63-1', { domain: 'custom', max: 2n ** 63n }],
    ['zero dcRangeSize', { dcRangeSize: 0n }],
    ['dcRangeSize of 2^63', { ...WHOLE_INT63, dcRangeSize: 2n ** 63n, maxDcRangeSize: 2n ** 63n }],
    ['maxDcRangeSize of 2^63', { ...WHOLE_INT63, maxDcRangeSize: 2n ** 63n }],
    ['blockSize above dcRangeSize', { blockSize: 1_001 }],
    ['fractional blockSize', { blockSize: 1.5 }],
    ['maxBlockSize below blockSize', { maxBlockSize: 99 }],
    ['maxBlockSize above dcRangeSize', { maxBlockSize: 1_001 }],
    ['claimIntervalMs of 0', { claimIntervalMs: 0 }],
    ['fractional autonomySeconds', { autonomySeconds: 1.5 }],
    ['maxDcRangeSize below dcRangeSize', { maxDcRangeSize: 999n }],
    ['no shards', { shards: 0 }],
    ['more shards than names allow', { shards: 257 }],
    ['threshold of 1', { threshold: 1 }],
    ['threshold NaN', { threshold: Number.NaN }],
    ['unknown domain', { domain: 'int16' as SequenceSettings['domain'] }],
    ['bad name', { name: 'a-b' }],
  ])('refuses %s with IDGEN_INVARIANT_BROKEN', (_label, broken) => {
    const error = catchError(() => validateStoredSettings({ ...good, ...broken }));
    expect(error).toBeInstanceOf(InvariantError);
    expect(error).toMatchObject({ code: 'IDGEN_INVARIANT_BROKEN' });
  });
});

describe('one table of rules for a create, an alter and a stored row', () => {
  // Fixed blocks of 100 and DC ranges of 1,000 in [1, 1,000,000].
  const sizes = { max: 1_000_000, dcRangeSize: 1_000, blockSize: 100 } as const;
  const current = resolveSequenceSettings('s', sizes);

  it('has one rule per setting', () => {
    expect(RULES.map((rule) => rule.field).sort()).toEqual(Object.keys(current).sort());
  });

  it.each<[string, AlterSequenceOptions, Partial<SequenceSettings>]>([
    ['a largest block above the DC range', { maxBlockSize: 1_001 }, { maxBlockSize: 1_001 }],
    [
      'a block above the largest block',
      { maxBlockSize: 500, blockSize: 600 },
      { maxBlockSize: 500, blockSize: 600 },
    ],
    ['a largest grant below the DC range', { maxDcRangeSize: 999 }, { maxDcRangeSize: 999n }],
    ['a threshold of 1', { threshold: 1 }, { threshold: 1 }],
    ['no shards', { shards: 0 }, { shards: 0 }],
  ])('refuses %s alike, in the same words', (_, options, stored) => {
    const created = catchError(() => resolveSequenceSettings('s', { ...sizes, ...options }));
    const altered = catchError(() => validateChanges(options, current));
    const read = catchError(() => validateStoredSettings({ ...current, ...stored }));
    expect(created).toBeInstanceOf(InvalidOptionError);
    const { option, allowed } = created as InvalidOptionError;
    expect(altered).toBeInstanceOf(InvalidOptionError);
    expect(altered).toMatchObject({ code: 'IDGEN_INVALID_OPTION', option, allowed });
    expect(read).toBeInstanceOf(InvariantError);
    const value = String((stored as Record<string, unknown>)[option]);
    expect(read).toMatchObject({
      code: 'IDGEN_INVARIANT_BROKEN',
      detail: `settings: ${option} ${value} is not ${allowed}`,
    });
  });

  it('refuses an alter of stored settings that break a rule the changes do not touch', () => {
    const error = catchError(() => validateChanges({ threshold: 0.25 }, { ...current, shards: 0 }));
    expect(error).toBeInstanceOf(InvariantError);
    expect((error as InvariantError).detail).toContain('shards 0');
  });
});

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
