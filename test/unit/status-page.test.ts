/**
 * The status page (src/serve/status-page.ts) over the in-memory store: what it shows of a
 * report, its escaping, a DC cut off, SERIAL unreachable, an empty keyspace, and its route.
 */

import { afterEach, describe, expect, it } from 'vitest';

import { Admin } from '../../src/admin/admin.js';
import { createServer } from '../../src/serve/server.js';
import { statusPage, type StatusSource } from '../../src/serve/status-page.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { IdStore } from '../../src/store/port.js';
import { draw, eachQuorumFails, KEYSPACE, processIn, withSequence } from './fixtures.js';

const HOSTILE = `<script>alert("x")</script> & 'y'`;

function adminOf(store: IdStore, extra: Partial<ConstructorParameters<typeof Admin>[0]> = {}) {
  return new Admin({
    store,
    dc: 'dc1',
    keyspace: KEYSPACE,
    hosts: () => [
      { address: '10.0.0.1:9042', dc: 'dc1', up: true },
      { address: '10.0.0.3:9042', dc: 'dc3', up: false },
    ],
    ...extra,
  });
}

/** The `<tr>` of `dc` in `page`. */
function rowOf(page: string, dc: string): string {
  const row = new RegExp(`<tr data-dc="${dc}"[^>]*>.*?</tr>`).exec(page);
  expect(row, `a row for ${dc}`).not.toBeNull();
  return row![0];
}

/** The text of a row's cells, tags dropped. */
function cellsOf(row: string): string[] {
  return [...row.matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((m) => m[1]!.replace(/<[^>]+>/g, ''));
}

describe('statusPage()', () => {
  it("shows each DC's ranges, IDs left, rate and runway against the autonomy target, and waste by cause", async () => {
    const { store, ids } = await withSequence({
      dcRangeSize: 1_000,
      blockSize: 10,
      autonomySeconds: 3_600,
    });
    await draw(ids.sequence('orders'), 5);
    await ids.close();
    const admin = adminOf(store);
    const first = await admin.status({ sampleMs: 0 });
    const later = processIn(store);
    await draw(later.sequence('orders'), 25);
    await later.close(); // gives the rest of its block back: IDs wasted as "notReturned" or not
    await new Promise((resolve) => setTimeout(resolve, 20));
    const report = await admin.status({ since: first });

    const page = statusPage(report);
    expect(page).toMatch(/^<!doctype html>/);
    expect(page).toContain('<meta http-equiv="refresh" content="10">');
    expect(page).not.toMatch(/<script|onload=|javascript:/i);
    expect(page).toContain('SERIAL reachable from dc1');
    expect(page).toContain('dc3 10.0.0.3:9042 DOWN');
    expect(page).toContain('autonomy target 1h 00m');
    const dc1 = report.sequences[0]!.dcs.find((dc) => dc.dc === 'dc1')!;
    const cells = cellsOf(rowOf(page, 'dc1'));
    expect(cells.slice(0, 2)).toEqual([
      'dc1 (here)',
      `#${dc1.reserved!.grant} [${dc1.reserved!.min}, ${dc1.reserved!.max}]`,
    ]);
    expect(cells[4]).toBe(dc1.left.toLocaleString('en-US'));
    expect(cells[5]).toMatch(/^[\d,.]+\/s$/);
    // At this rate 1,000 IDs last seconds, far below the hour of autonomy asked for.
    expect(cells[6]).toMatch(/^\d+s$/);
    expect(rowOf(page, 'dc1')).toContain('class="n low"');
    expect(cells[8]).toBe('runway below the autonomy target of 1h 00m');
    const usage = dc1.usage!;
    expect(cells[7]).toContain(`${usage.wastedTotal} wasted`);
    expect(cells[7]).toContain(`${usage.issued} issued`);
  });

  it('escapes every text: host addresses, causes, reasons', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 10 });
    await ids.close();
    store.faults.push({ op: 'probeSerial', effect: 'unavailable', times: Infinity });
    const admin = adminOf(eachQuorumFails(store), {
      hosts: () => [
        { address: HOSTILE, dc: 'dc1', up: true },
        { address: '10.0.0.3:9042', dc: 'dc3', up: true },
      ],
      statesInDc: () => Promise.reject(new Error(HOSTILE)),
    });
    const page = statusPage(await admin.status({ sampleMs: 0 }));
    expect(page).not.toContain('<script>');
    expect(page).toContain('&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#39;y&#39;');
  });

  it('marks a DC cut off: its rows not current, rate and runway unknown, never 0/s or ∞', async () => {
    const store = new MemoryStore({ keyspace: KEYSPACE });
    const dc1 = processIn(store);
    const dc3 = processIn(store, 'dc3');
    await dc1.createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
    await draw(dc1.sequence('orders'), 5);
    await draw(dc3.sequence('orders'), 5);
    await Promise.all([dc1.close(), dc3.close()]);
    const admin = adminOf(eachQuorumFails(store), {
      statesInDc: (dc) => Promise.reject(new Error(`no answer from the nodes of ${dc}`)),
    });
    const page = statusPage(await admin.status({ sampleMs: 5 }));

    expect(rowOf(page, 'dc1')).toContain('data-current="true"');
    const cutOff = rowOf(page, 'dc3');
    expect(cutOff).toContain('data-current="false" class="stale"');
    expect(cellsOf(cutOff).slice(4)).toEqual([
      '995',
      '?',
      'unknown',
      expect.stringMatching(/wasted/),
      expect.stringMatching(
        /^rows not current: not read current from dc1 \(EACH_QUORUM read failed: .*; its own nodes not reached either: no answer from the nodes of dc3\)$/,
      ),
    ]);
  });

  it('says SERIAL is unreachable, and why', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 10 });
    await ids.close();
    store.faults.push({ op: 'probeSerial', effect: 'unavailable', times: Infinity });
    const page = statusPage(await adminOf(store).status({ sampleMs: 0 }));
    expect(page).toMatch(
      /<p id="serial" class="bad">SERIAL UNREACHABLE from dc1: new DC ranges cannot be granted; each DC serves only the IDs it holds \(see runway\)<br><span class="muted">cause \(after \d+ ms\): [^<]*SERIAL/,
    );
  });

  it('an empty keyspace: no sequences, no table', async () => {
    const page = statusPage(await adminOf(new MemoryStore()).status({ sampleMs: 0 }));
    expect(page).toContain(`<p id="no-sequences">No sequences in keyspace ${KEYSPACE} yet.</p>`);
    expect(page).not.toContain('<table');
  });
});

describe('GET /status', () => {
  const open: { close(): Promise<unknown> }[] = [];
  afterEach(async () => {
    for (const closable of open.splice(0)) await closable.close();
  });

  /** A service with `status` over a store holding sequence "orders"; the calls it saw. */
  async function service(
    options: { readonly token?: string; readonly metricsAuth?: boolean } = {},
  ) {
    const { store, ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 10 });
    const admin = adminOf(store);
    const calls: Parameters<StatusSource['status']>[0][] = [];
    const status: StatusSource = {
      status: (asked) => {
        calls.push(asked);
        // A first report samples 1 s in service; 5 ms here.
        return admin.status(asked.since === undefined ? { sampleMs: 5 } : asked);
      },
    };
    const app = createServer(ids, { ...options, status });
    open.push(app, ids);
    return { app, ids, calls };
  }

  it('answers the page, one read for concurrent viewers, rates since the report served before', async () => {
    const { app, ids, calls } = await service();
    const [one, two] = await Promise.all([app.inject('/status'), app.inject('/status')]);
    expect(one.statusCode).toBe(200);
    expect(one.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(one.body).toContain('<section data-sequence="orders">');
    expect(two.body).toBe(one.body);
    expect(calls).toEqual([{ sampleMs: 1_000 }]);

    // Within 2 s the same report again; after, rates run from it.
    expect((await app.inject('/status')).body).toBe(one.body);
    expect(calls).toHaveLength(1);
    await draw(ids.sequence('orders'), 25);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const later = await app.inject('/status');
    expect(calls).toHaveLength(2);
    expect(calls[1]!.since).toBeDefined();
    expect(cellsOf(rowOf(later.body, 'dc1'))[5]).toMatch(/^[\d,.]+\/s$/);
  });

  it('needs the token when /metrics does, and is open otherwise', async () => {
    const open = await service({ token: 'secret' });
    expect((await open.app.inject('/status')).statusCode).toBe(200);
    const closed = await service({ token: 'secret', metricsAuth: true });
    expect((await closed.app.inject('/status')).statusCode).toBe(401);
    const authorized = await closed.app.inject({
      url: '/status',
      headers: { authorization: 'Bearer secret' },
    });
    expect(authorized.statusCode).toBe(200);
  });

  it('answers 404 IDGEN_NOT_FOUND without a status source; refuses a source without status()', async () => {
    const { store, ids } = await withSequence({ dcRangeSize: 1_000, blockSize: 10 });
    const app = createServer(ids);
    open.push(app, ids);
    const response = await app.inject('/status');
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'IDGEN_NOT_FOUND' });
    expect(response.json().message).toContain('"status" option of createServer()');
    expect(() => createServer(ids, { status: store as never })).toThrow(
      'Invalid option "status": received',
    );
  });
});
