/**
 * The integration tests' reading of the draw workers' files of IDs (test/support/workers.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { expect, it } from 'vitest';

import { readIdFile } from '../support/workers.js';

it('reads whole lines only: a last line cut short by a kill is dropped, not read as an ID', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-ids-'));
  const file = path.join(dir, 'dc1.ids');
  const read = (text: string) => {
    fs.writeFileSync(file, text);
    return readIdFile(file);
  };
  try {
    expect(read('1000001\n1000002\n')).toEqual([1000001n, 1000002n]);
    // Killed while writing 1000003: its first digits would be ID 100.
    expect(read('1000001\n1000002\n100')).toEqual([1000001n, 1000002n]);
    expect(read('100')).toEqual([]);
    expect(read('')).toEqual([]);
    expect(readIdFile(path.join(dir, 'none.ids'))).toEqual([]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
