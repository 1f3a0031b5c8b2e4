/**
 * The metrics as documented and shipped agree with what is exposed: docs/metrics.md's table,
 * metricsTable(), a registry's exposition after real use, and every metric the alert rules and the
 * dashboard name.
 */
import { readFileSync } from 'node:fs';

import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';

import { IdGen } from '../../src/connect.js';
import { metricsTable, type MetricDescription } from '../../src/metrics/table.js';
import { MemoryStore } from '../../src/store/memory.js';
import { KEYSPACE, draw, settle } from './fixtures.js';
import { itOnFakeClock } from '../support/fake-clock.js';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

/** The rows of the table under docs/metrics.md's "## The metrics", cells without backticks. */
function documentedMetrics(): MetricDescription[] {
  const doc = read('docs/metrics.md');
  const start = doc.indexOf('\n## The metrics\n');
  expect(start, 'docs/metrics.md has a "## The metrics" section').toBeGreaterThan(0);
  const end = doc.indexOf('\n## ', start + 1);
  const section = doc.slice(start + 1, end < 0 ? undefined : end);
  const lines = section.split('\n');
  const header = lines.findIndex((line) => line.startsWith('| metric '));
  expect(header, 'the section has a table').toBeGreaterThan(0);
  const rows: MetricDescription[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim().replaceAll('`', ''));
    const [name = '', type = '', labels = '', help = ''] = cells;
    rows.push({
      name,
      type: type as MetricDescription['type'],
      labels: labels === '–' ? [] : labels.split(',').map((label) => label.trim()),
      help,
    });
  }
  return rows;
}

const table = new Map(metricsTable().map((metric) => [metric.name, metric]));

/** The table's metric behind a series name (`_bucket`, `_count`, `_sum` of a histogram). */
function metricOf(series: string): MetricDescription | undefined {
  const direct = table.get(series);
  if (direct !== undefined) return direct;
  const base = /^(.*)_(bucket|count|sum)$/.exec(series)?.[1];
  const histogram = base === undefined ? undefined : table.get(base);
  return histogram?.type === 'histogram' ? histogram : undefined;
}

/** Every `idgen_…` name a PromQL expression uses. */
function namesIn(expression: string): string[] {
  return [...expression.matchAll(/\bidgen_[a-z0-9_]+/g)].map((match) => match[0]);
}

describe("docs/metrics.md's metrics table", () => {
  it('is metricsTable(), row by row', () => {
    expect(documentedMetrics()).toEqual(metricsTable().map((metric) => ({ ...metric })));
  });

  itOnFakeClock(
    'lists exactly what a registry exposes after IDs are drawn and the rows polled',
    async () => {
      const store = new MemoryStore({ keyspace: KEYSPACE });
      const registry = new Registry();
      const ids = new IdGen({
        store,
        dc: 'dc1',
        keyspace: KEYSPACE,
        metrics: { registry, runwayIntervalMs: 15_000 },
      });
      await ids.createSequence('orders', { dcRangeSize: 1_000, blockSize: 10 });
      const orders = ids.sequence('orders');
      for (let poll = 0; poll < 2; poll++) {
        await draw(orders, 50);
        await orders.take(7);
        await vi.advanceTimersByTimeAsync(15_000);
        await settle();
      }
      const exposition = await registry.metrics();
      await ids.close();

      const documented = documentedMetrics();
      const types = [...exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => ({
        name,
        type,
      }));
      expect(types).toEqual(documented.map(({ name, type }) => ({ name, type })));

      // Every series carries the documented labels (a histogram's buckets add `le`), and every
      // documented metric has a value after this use.
      const seen = new Set<string>();
      for (const [, series = '', labels = ''] of exposition.matchAll(
        /^(idgen_[a-z0-9_]+)(?:\{([^}]*)\})? \S+$/gm,
      )) {
        const metric = metricOf(series);
        expect(metric, series).toBeDefined();
        const names = [...labels.matchAll(/(\w+)="/g)].map(([, name]) => name);
        const expected = [...metric!.labels, ...(series.endsWith('_bucket') ? ['le'] : [])];
        expect(names.sort(), series).toEqual(expected.sort());
        seen.add(metric!.name);
      }
      // What this use does not cause (failures, lost races, unknown outcomes) has no series yet.
      const notCaused = [
        'idgen_call_errors_total',
        'idgen_errors_total',
        'idgen_cas_rejections_total',
        'idgen_cas_unknown_outcomes_total',
      ];
      expect([...seen].sort()).toEqual(
        documented
          .map(({ name }) => name)
          .filter((name) => !notCaused.includes(name))
          .sort(),
      );
    },
  );
});

describe('ops files', () => {
  it('alert rules name only documented metrics, and cover runway, SERIAL, errors and durability', () => {
    const rules = (
      parse(read('ops/prometheus/idgen-alerts.yml')) as {
        groups: { name: string; rules: Record<string, unknown>[] }[];
      }
    ).groups.flatMap((group) => group.rules);
    expect(rules.length).toBeGreaterThan(0);
    const used = new Set<string>();
    for (const rule of rules) {
      expect(rule, String(rule['alert'])).toMatchObject({
        alert: expect.stringMatching(/^Idgen[A-Za-z]+$/),
        expr: expect.any(String),
        labels: { severity: expect.stringMatching(/^(warning|critical)$/) },
        annotations: { summary: expect.any(String), description: expect.any(String) },
      });
      for (const name of namesIn(rule['expr'] as string)) {
        expect(metricOf(name), `${String(rule['alert'])}: ${name}`).toBeDefined();
        used.add(metricOf(name)!.name);
      }
    }
    for (const name of [
      'idgen_dc_runway_seconds',
      'idgen_serial_reachable',
      'idgen_call_errors_total',
      'idgen_errors_total',
      'idgen_dc_unsafe_nodes',
    ]) {
      expect(used).toContain(name);
    }
  });

  it('the dashboard queries only documented metrics', () => {
    const dashboard = JSON.parse(read('ops/grafana/idgen-dashboard.json')) as unknown;
    const expressions: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (typeof node === 'object' && node !== null) {
        for (const [key, value] of Object.entries(node)) {
          if (
            (key === 'expr' || key === 'query' || key === 'definition') &&
            typeof value === 'string'
          ) {
            expressions.push(value);
          } else {
            walk(value);
          }
        }
      }
    };
    walk(dashboard);
    const names = expressions.flatMap(namesIn);
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(metricOf(name), name).toBeDefined();
    expect(names).toContain('idgen_dc_runway_seconds');
    expect(names).toContain('idgen_block_claim_duration_seconds_bucket');
  });
});
