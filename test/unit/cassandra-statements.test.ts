/**
 * The consistency levels of the statements, as a property: a plain read of the protocol's tables
 * must overlap the quorum its DC's writes commit at, or a read right after a write may miss it.
 */
import cassandra from 'cassandra-driver';
import { describe, expect, it } from 'vitest';

import { levelOf, STATEMENTS } from '../../src/store/cassandra/statements.js';

const CL = cassandra.types.consistencies;

describe('STATEMENTS', () => {
  it('reads the grants and DC-state tables plainly at a quorum of the local DC or of every DC, never at ONE', () => {
    const plainReads = Object.entries(STATEMENTS).filter(
      ([, s]) =>
        /^SELECT\b/.test(s.cql) &&
        /\$(grants|dc_state)\b/.test(s.cql) &&
        s.consistency !== CL.serial &&
        s.consistency !== CL.localSerial,
    );
    // The status reads among them: `seed` then `status` must find what the create committed.
    expect(plainReads.map(([name]) => name)).toEqual(
      expect.arrayContaining(['grantsOverview', 'dcStateOverview', 'readSequence']),
    );
    for (const [name, statement] of plainReads) {
      expect(`${name}: ${levelOf(statement.consistency)}`).toMatch(/: (LOCAL_QUORUM|EACH_QUORUM)$/);
    }
  });
});
