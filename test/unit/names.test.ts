/** One rule per kind of name, each error stating its own rule. */
import { describe, expect, it } from 'vitest';

import { InvalidNameError } from '../../src/errors.js';
import { isValidName, NAME_RULES } from '../../src/names.js';

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
