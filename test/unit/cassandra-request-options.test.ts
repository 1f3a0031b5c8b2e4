import { describe, expect, it } from 'vitest';

import {
  NEVER_RETRY,
  ONE_PAGE_ROWS,
  PAGE_ROWS,
  RETRY_READS,
  requestOptions,
} from '../../src/store/cassandra/request-options.js';
import { STATEMENTS, type StatementName } from '../../src/store/cassandra/statements.js';

describe('request options', () => {
  it('reads check takes as one snapshot, and the usage counters read from their first page, in one page', () => {
    const whole = Object.entries(STATEMENTS)
      .filter(
        ([, statement]) => requestOptions(statement, false, 5_000).fetchSize === ONE_PAGE_ROWS,
      )
      .map(([name]) => name as StatementName);
    // Each page of a SERIAL read is a Paxos round of its own: pages of the grants could show
    // the partition at two moments, and check would judge a view no moment had.
    expect(whole.sort()).toEqual(['grantsConsistent', 'readDcUsage']);
  });

  it('sets the page size of every other statement, whatever fetchSize the client was given', () => {
    for (const [name, statement] of Object.entries(STATEMENTS)) {
      if (name === 'grantsConsistent' || name === 'readDcUsage') continue;
      expect(requestOptions(statement, false, 5_000).fetchSize, name).toBe(PAGE_ROWS);
    }
  });

  it('never retries a conditional write and retries reads once', () => {
    const write = requestOptions(STATEMENTS.updateDcState, true, 5_000);
    expect(write).toMatchObject({ isIdempotent: false, retry: NEVER_RETRY, readTimeout: 5_000 });
    expect(write.serialConsistency).toBe(STATEMENTS.updateDcState.serial);
    const read = requestOptions(STATEMENTS.readDcState, false, 5_000);
    expect(read).toMatchObject({ isIdempotent: true, retry: RETRY_READS });
  });
});
