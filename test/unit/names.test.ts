/** One rule per kind of name, each error stating its own rule. */
import { describe, expect, it } from 'vitest';

import { InvalidNameError } from '../../src/errors.js';
import { dcOfGrantee, granteeName, isValidName, NAME_RULES } from '../../src/names.js';

describe('name rules', () => {
  it.each([
    ['sequence', 'orders_2', true],
    ['sequence', '2orders', false],
    ['sequence', 'a'.repeat(49), false],
    ['keyspace', 'IdGen', true],
    ['keyspace', 'id-gen', false],
    ['datacenter', 'eu-west-1.a', true],
    ['datacenter', 'GLOBAL', false],
    ['datacenter', "dc1'", false],
    ['datacenter', '', false],
  ] as const)('%s %j: %s', (kind, value, valid) => {
    expect(isValidName(kind, value)).toBe(valid);
  });

  it('states the rule of the kind in the error', () => {
    for (const kind of ['sequence', 'keyspace', 'datacenter'] as const) {
      const error = new InvalidNameError(kind, 'bad name');
      expect(error.message).toBe(`Invalid ${kind} name "bad name": ${NAME_RULES[kind].rule}.`);
      expect(error.code).toBe('IDGEN_INVALID_NAME');
    }
    expect(new InvalidNameError('datacenter', 'GLOBAL').message).toMatch(/not "GLOBAL"/);
  });
});

describe('grantee names: a DC, or shard k > 0 of it as "dc/k"', () => {
  it('names shard 0 after its DC, so that an unsharded sequence and shard 0 share rows', () => {
    expect(granteeName('dc1', 0)).toBe('dc1');
    expect(granteeName('eu-west-1.a', 7)).toBe('eu-west-1.a/7');
  });

  it.each([
    ['dc1', 'dc1'],
    ['dc1/1', 'dc1'],
    ['eu-west-1.a/255', 'eu-west-1.a'],
    ['dc1/0', undefined], // shard 0 is named "dc1"; another name for it would be a second partition
    ['dc1/01', undefined],
    ['dc1/256', undefined],
    ['dc1/x', undefined],
    ['dc1/2/3', undefined],
    ['GLOBAL/1', undefined],
    ['/1', undefined],
    [7, undefined],
  ] as const)('%j belongs to %j', (name, dc) => {
    expect(dcOfGrantee(name)).toBe(dc);
  });
});
