/**
 * The durability watch on the real cluster (docs/operations.md, "The durability watch"): one node
 * of dc1 restarted with `commitlog_sync: periodic` while a process of dc1 draws. Its gauge turns,
 * the alert rule fires on the series it exposed (promtool), and no block is claimed from dc1 until
 * the node runs batch again; then claims resume.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

import { connect, IdGenError, UnsafeClusterError, type IdGen } from '../../src/index.js';
import { CassandraStore } from '../../src/store/cassandra/store.js';
import { clusterInfo, faults, newClient, withKeyspace } from '../support/cluster.js';

const ks = withKeyspace('durability', { create: 'tables' });
const CHECK_MS = 2_000;
const hasPromtool = spawnSync('promtool', ['--version']).status === 0;

const ALERTS = fileURLToPath(new URL('../../ops/prometheus/idgen-alerts.yml', import.meta.url));

/** What the drawing process exposed of the gauge, one sample per few seconds. */
const samples: { series: string; value: number }[] = [];

async function until(what: string, ok: () => Promise<boolean> | boolean, ms = 60_000) {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The gauge's one series as exposed, e.g. `idgen_dc_unsafe_nodes{dc="dc1"}`, and its value. */
async function gauge(registry: Registry): Promise<{ series: string; value: number } | undefined> {
  const match = /^(idgen_dc_unsafe_nodes\{[^}]*\}) (\S+)$/m.exec(await registry.metrics());
  return match === null ? undefined : { series: match[1]!, value: Number(match[2]) };
}

describe.runIf(clusterInfo().faults)('a node of the DC restarted with commitlog periodic', () => {
  it('stops block claims from the DC until it runs batch again; held IDs are served', async () => {
    const node = clusterInfo()
      .nodes.filter((n) => n.dc === 'dc1')
      .at(-1)!;
    const registry = new Registry();
    const records: { level: number; msg: string }[] = [];
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => records.push(JSON.parse(line)) },
    );
    const ids: IdGen = await connect({
      ...ks.connection('dc1'),
      logger,
      durabilityCheckMs: CHECK_MS,
      metrics: { registry, runwayIntervalMs: 0 },
    });
    const client = newClient('dc1', ks.name);
    const rows = new CassandraStore(client, ks.name, { ownsClient: false });
    const dcState = async () => (await rows.readDcState('orders', 'dc1'))?.version;
    let stop = false;
    const drawn: number[] = [];
    const refusals: unknown[] = [];
    const others: unknown[] = [];
    let sampling: NodeJS.Timeout | undefined;
    let reconfigured = false;
    try {
      await ids.createSequence('orders', { dcRangeSize: 100_000, blockSize: 5, maxBlockSize: 5 });
      const orders = ids.sequence('orders');
      const drawing = (async () => {
        while (!stop) {
          try {
            drawn.push(await orders.next());
          } catch (error) {
            (error instanceof UnsafeClusterError ? refusals : others).push(error);
          }
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      sampling = setInterval(() => {
        void gauge(registry).then((sample) => sample && samples.push(sample));
      }, 1_000);
      await until('the first check', async () => (await gauge(registry))?.value === 0);
      await until('IDs drawn', () => drawn.length > 20);

      reconfigured = true;
      await faults.restartWithCommitlog(node.name, 'periodic');
      await until('the gauge to turn', async () => (await gauge(registry))?.value === 1);
      const blocks = ids.stats().totals.blocksClaimed;
      const version = await dcState();
      const refused = refusals.length;
      // Past many checks: the blocks held run out, and no claim goes through meanwhile.
      await until('claims refused', () => refusals.length > refused + 10, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 3 * CHECK_MS));
      expect(ids.stats().totals.blocksClaimed).toBe(blocks);
      expect(await dcState()).toBe(version);
      const refusal = refusals.at(-1) as UnsafeClusterError;
      expect(refusal.code).toBe('IDGEN_UNSAFE_CLUSTER');
      expect(refusal.problems.join('\n')).toContain(`commitlog_sync periodic on ${node.address}`);
      const logged = records.filter((r) => r.level === 50 && r.msg.includes('periodic'));
      expect(logged).toHaveLength(1);
      expect(logged[0]!.msg).toContain('set commitlog_sync: batch');

      await faults.restartWithCommitlog(node.name, 'batch');
      reconfigured = false;
      await until('the gauge to clear', async () => (await gauge(registry))?.value === 0);
      const resumed = drawn.length;
      await until('claims to resume', () => drawn.length > resumed + 20, 30_000);
      expect(ids.stats().totals.blocksClaimed).toBeGreaterThan(blocks);
      expect(await dcState()).toBeGreaterThan(version!);
      stop = true;
      await drawing;
      expect(new Set(drawn).size).toBe(drawn.length);
      // Only refusals, or a node down during its restarts (the DC's other two keep a quorum).
      for (const error of others) expect(error).toBeInstanceOf(IdGenError);
    } finally {
      stop = true;
      clearInterval(sampling);
      if (reconfigured) {
        await faults.restartWithCommitlog(node.name, 'batch').catch(() => faults.start(node.name));
      }
      await ids.close();
      await client.shutdown();
    }
  }, 600_000);

  // The gauge as the process exposed it, replayed one sample per minute: promtool checks the
  // shipped rule fires on it; idgen-alerts.test.yml checks its timing at real intervals.
  it.runIf(hasPromtool)('fires IdgenUnsafeNodes on the series the process exposed', () => {
    expect(samples.some((s) => s.value === 1)).toBe(true);
    const series = samples[0]!.series;
    const values = samples.map((s) => s.value);
    const first = values.indexOf(1);
    const run = values.slice(first).findIndex((v) => v !== 1);
    const unsafeMinutes = run < 0 ? values.length - first : run;
    expect(unsafeMinutes).toBeGreaterThan(3);
    const dc = /dc="([^"]+)"/.exec(series)![1]!;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-alerts-'));
    // The rule's annotations as Prometheus renders them for this series at value 1.
    const rule = (
      parse(fs.readFileSync(ALERTS, 'utf8')) as {
        groups: { rules: { alert: string; annotations: Record<string, string> }[] }[];
      }
    ).groups
      .flatMap((group) => group.rules)
      .find((r) => r.alert === 'IdgenUnsafeNodes')!;
    const rendered = (text: string) =>
      text.replaceAll('{{ $labels.dc }}', dc).replaceAll('{{ $value }}', '1');
    const annotations = Object.fromEntries(
      Object.entries(rule.annotations).map(([key, text]) => [key, rendered(text)]),
    );
    const test = {
      rule_files: [ALERTS],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: [{ series, values: values.join(' ') }],
          alert_rule_test: [
            { eval_time: `${first}m`, alertname: 'IdgenUnsafeNodes', exp_alerts: [] },
            {
              eval_time: `${first + 3}m`,
              alertname: 'IdgenUnsafeNodes',
              exp_alerts: [
                { exp_labels: { severity: 'critical', dc }, exp_annotations: annotations },
              ],
            },
          ],
        },
      ],
    };
    try {
      fs.writeFileSync(path.join(dir, 'test.yml'), JSON.stringify(test));
      const result = spawnSync('promtool', ['test', 'rules', 'test.yml'], {
        cwd: dir,
        encoding: 'utf8',
      });
      expect(`${result.stdout}${result.stderr}`).toMatch(/SUCCESS/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
