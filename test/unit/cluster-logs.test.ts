/**
 * The local cluster's log scan (scripts/cluster/nodes.ts, logLines): the linearizability check
 * and the start probe read system.log in chunks, since a node's log, kept across restarts, can
 * outgrow the longest string Node can make.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { logLines } from '../../scripts/cluster/nodes.js';
import type { NodeSpec } from '../../scripts/cluster/topology.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-cluster-logs-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function nodeWithLog(name: string, content: Buffer | string): NodeSpec {
  const nodeDir = path.join(dir, name);
  fs.mkdirSync(path.join(nodeDir, 'logs'), { recursive: true });
  fs.writeFileSync(path.join(nodeDir, 'logs', 'system.log'), content);
  return {
    name,
    dc: 'dc1',
    address: '127.0.0.1',
    jmxPort: 7199,
    token: '0',
    osUser: 'nobody',
    dir: nodeDir,
  };
}

const CHUNK = 8 * 1024 * 1024;

describe('logLines', () => {
  it('finds lines across chunk ends, whole, with a character split between two reads intact', () => {
    // Filler up to 3 bytes before the first chunk's end, then a line whose "é" (2 bytes) and
    // match straddle it; more filler; a match as the last line, without a newline.
    const filler = 'INFO  [OptionalTasks:1] CassandraRoleManager.java:501 - rescheduling\n';
    const head = filler.repeat(Math.floor((CHUNK - 3) / filler.length));
    const pad = 'x'.repeat(CHUNK - 3 - Buffer.byteLength(head) - 1) + '\n';
    const straddling = 'ab\u00e9 Linearizability violation in ballot 1';
    const content = Buffer.concat([
      Buffer.from(head + pad),
      Buffer.from(straddling + '\n'),
      Buffer.from(filler.repeat(1_000)),
      Buffer.from('ERROR Linearizability violation at the end'),
    ]);
    expect(content.indexOf(Buffer.from('\u00e9'))).toBe(CHUNK - 1);
    const node = nodeWithLog('chunks', content);
    expect(logLines(node, /Linearizability violation/)).toEqual([
      straddling,
      'ERROR Linearizability violation at the end',
    ]);
    expect(logLines(node, /rescheduling/).length).toBe(
      Math.floor((CHUNK - 3) / filler.length) + 1_000,
    );
  });

  it('reads from an offset, and answers nothing for a node without a log', () => {
    const node = nodeWithLog('offset', 'Starting listening for CQL clients\nrestarted\n');
    expect(logLines(node, /Starting listening/)).toHaveLength(1);
    expect(
      logLines(node, /Starting listening/, 'Starting listening for CQL clients\n'.length),
    ).toEqual([]);
    expect(logLines({ ...node, dir: path.join(dir, 'absent') }, /anything/)).toEqual([]);
  });

  it('refuses a global pattern, whose test() would skip matches', () => {
    const node = nodeWithLog('global', 'a\n');
    expect(() => logLines(node, /a/g)).toThrow(/non-global/);
  });
});
