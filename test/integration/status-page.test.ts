/**
 * The status page (GET /status) of a service in each DC, loaded by a real headless browser
 * (Debian's chromium) against the real cluster while dc3 is cut off: from dc3 SERIAL is
 * unreachable and dc3 serves from its range, with its runway; once this host cannot reach dc3's
 * nodes either, dc1's page marks dc3's rows not current, its runway unknown. Set
 * IDGEN_STATUS_SCREENSHOT to a file to keep a screenshot of dc3's page (docs/status-page.png).
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect, createServer, openAdmin, type Admin, type IdGen } from '../../src/index.js';
import { clusterInfo, dcNames, faults, withKeyspace } from '../support/cluster.js';

const run = promisify(execFile);
const CHROMIUM = 'chromium';
const ks = withKeyspace('status_page');

interface Service {
  readonly ids: IdGen;
  readonly admin: Admin;
  readonly server: FastifyInstance;
  readonly url: string;
}

const services = new Map<string, Service>();
let scratch: string;

beforeAll(async () => {
  // Fails, never skips: CI installs Debian's chromium for this file.
  await run(CHROMIUM, ['--version']).catch((error: unknown) => {
    throw new Error(
      `This test needs a headless browser: "${CHROMIUM} --version" failed (${String(error)}). Install Debian's chromium: apt-get install -y chromium.`,
    );
  });
  scratch = await mkdtemp(join(tmpdir(), 'idgen-status-page-'));
  for (const dc of dcNames()) {
    const ids = await connect(ks.connection(dc));
    const admin = await openAdmin(ks.connection(dc));
    const server = createServer(ids, { status: admin });
    const url = await server.listen({ host: '127.0.0.1', port: 0 });
    services.set(dc, { ids, admin, server, url });
  }
});

afterAll(async () => {
  for (const { ids, admin, server } of services.values()) {
    await server.close();
    await Promise.all([ids.close(), admin.close()]);
  }
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

function service(dc: string): Service {
  return services.get(dc)!;
}

/** Chromium headless on `url` with `args`, a profile of its own (two may run at once); its stdout. */
async function chromium(url: string, args: readonly string[]): Promise<string> {
  const profile = await mkdtemp(join(scratch, 'profile-'));
  const { stdout } = await run(
    CHROMIUM,
    [
      '--headless',
      '--disable-gpu',
      '--no-sandbox',
      '--no-first-run',
      `--user-data-dir=${profile}`,
      ...args,
      url,
    ],
    { timeout: 90_000, maxBuffer: 16 * 1024 * 1024 },
  );
  return stdout;
}

/** The DOM chromium built from `dc`'s status page. */
function pageOf(dc: string): Promise<string> {
  return chromium(`${service(dc).url}/status`, ['--dump-dom']);
}

/** The text of the cells of `dc`'s row, tags dropped. */
function cellsOf(page: string, dc: string): string[] {
  const row = new RegExp(`<tr data-dc="${dc}"[^>]*>(.*?)</tr>`).exec(page);
  expect(row, `a row for ${dc} in:\n${page}`).not.toBeNull();
  return [...row![1]!.matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((m) =>
    m[1]!.replace(/<[^>]+>/g, '').replaceAll('&amp;', '&'),
  );
}

/** Draws IDs in `dc` until stopped, so that rates and runways are measured. */
function drawing(dc: string): { stop(): Promise<number> } {
  let stopped = false;
  let drawn = 0;
  const loop = (async () => {
    const orders = service(dc).ids.sequence('page');
    while (!stopped) {
      await orders.next();
      drawn++;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return drawn;
    },
  };
}

describe.runIf(clusterInfo().faults)('the status page with dc3 cut off', () => {
  it("shows dc3's SERIAL unreachable and its runway from dc3, and dc3 not current from dc1", async () => {
    await service('dc1').ids.createSequence('page', {
      dcRangeSize: 100_000,
      blockSize: 10,
      autonomySeconds: 3_600,
    });
    for (const dc of dcNames()) await service(dc).ids.sequence('page').next(); // a range each

    await faults.partition('dc3');
    try {
      // In dc3: processes keep drawing from dc3's range, SERIAL is unreachable.
      const draws = drawing('dc3');
      const [inDc3, inDc2] = await Promise.all([pageOf('dc3'), pageOf('dc2')]);
      const screenshot = join(scratch, 'status.png');
      await chromium(`${service('dc3').url}/status`, [
        `--screenshot=${screenshot}`,
        '--window-size=1280,560',
        '--hide-scrollbars',
      ]);
      expect(await draws.stop()).toBeGreaterThan(0);

      expect(inDc3).toMatch(/<title>idgen-cass · status_page_\w+ · dc3<\/title>/);
      expect(inDc3).toContain(
        'SERIAL UNREACHABLE from dc3: new DC ranges cannot be granted; each DC serves only the IDs it holds (see runway)',
      );
      const dc3 = cellsOf(inDc3, 'dc3');
      expect(dc3[0]).toBe('dc3 (here)');
      expect(dc3[1]).toMatch(/^#1 \[\d+, \d+\]$/); // its range
      expect(Number(dc3[4]!.replaceAll(',', ''))).toBeGreaterThan(90_000); // IDs left
      expect(dc3[5]).toMatch(/^[\d,.]+\/s$/); // rate
      expect(dc3[6]).toMatch(/^\d+[dhms]( \d+[hms])?$|^∞$/); // runway
      expect(dc3[7]).toMatch(/wasted .*issued/); // waste by cause

      // dc2, on the majority side: SERIAL reachable; dc3's rows read through dc3's own nodes.
      expect(inDc2).toMatch(/<p id="serial" class="ok">SERIAL reachable from dc2 \(\d+ ms\)/);
      expect(inDc2).not.toContain('data-current="false"');
      expect(cellsOf(inDc2, 'dc2')[1]).toMatch(/^#1 \[\d+, \d+\]$/);

      const png = await readFile(screenshot);
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      const keep = process.env['IDGEN_STATUS_SCREENSHOT'];
      if (keep) await copyFile(screenshot, keep);

      // This host cut off from dc3 as well: from dc1 dc3's rows cannot be read current.
      await faults.cutClients('dc3');
      const inDc1 = await pageOf('dc1');
      expect(inDc1).toMatch(/<p id="serial" class="ok">SERIAL reachable from dc1/);
      expect(inDc1).toMatch(/<tr data-dc="dc3" data-current="false" class="stale">/);
      const cutOff = cellsOf(inDc1, 'dc3');
      expect(cutOff.slice(5, 7)).toEqual(['?', 'unknown']);
      expect(cutOff[8]).toMatch(
        /^rows not current: not read current from dc1 \(EACH_QUORUM read failed: .*; its own nodes not reached either: /,
      );
      expect(cellsOf(inDc1, 'dc1')[6]).not.toBe('unknown');
    } finally {
      await faults.heal();
    }
  });
});
