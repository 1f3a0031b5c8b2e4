/** `idgen-cass preflight` as text (a line per node and check, then the verdict) and as JSON. */
import type { CheckStatus, PreflightReport } from '../admin/preflight.js';
import { plural, table } from './format.js';

const MARK: Readonly<Record<CheckStatus, string>> = {
  ok: 'ok',
  info: 'info',
  warning: 'WARNING',
  unsafe: 'UNSAFE',
  unknown: 'UNKNOWN',
};

export function renderPreflight(report: PreflightReport): string[] {
  const rows: string[][] = [['DC', 'node', 'version', 'check', 'result', 'found']];
  for (const node of report.nodes) {
    const version = node.version ?? '–';
    if (!node.checked) {
      rows.push([node.dc, node.host, version, '(not checked)', 'UNKNOWN', node.error ?? '']);
      continue;
    }
    for (const check of node.checks) {
      rows.push([node.dc, node.host, version, check.check, MARK[check.status], check.message]);
    }
  }
  const dcs = [...new Set(report.nodes.map((node) => node.dc))];
  const scope = `${plural(report.nodes.length, 'node')} in ${dcs.join(', ')}`;
  const lines = [
    `keyspace ${report.keyspace} · checked from ${report.dc} · ${report.at.toISOString()}`,
    '',
    ...table(rows),
    '',
  ];
  switch (report.verdict) {
    case 'safe':
      lines.push(`safe: ${scope}; no setting under which an ID could be handed out twice`);
      break;
    case 'unsafe':
      lines.push(`UNSAFE: ${plural(report.problems.length, 'problem')} (${scope}):`);
      lines.push(...report.problems.map((problem) => `  ${problem}`));
      break;
    case 'incomplete':
      lines.push(`INCOMPLETE: nothing unsafe on the nodes read, but not every node could be read:`);
      lines.push(...report.unchecked.map((line) => `  ${line}`));
      break;
  }
  return lines;
}

export function preflightJson(report: PreflightReport): Record<string, unknown> {
  return {
    keyspace: report.keyspace,
    dc: report.dc,
    at: report.at,
    verdict: report.verdict,
    problems: report.problems,
    unchecked: report.unchecked,
    nodes: report.nodes.map((node) => ({
      host: node.host,
      dc: node.dc,
      version: node.version ?? null,
      checked: node.checked,
      error: node.error ?? null,
      checks: node.checks.map((check) => ({
        check: check.check,
        status: check.status,
        value: check.value ?? null,
        message: check.message,
      })),
    })),
  };
}

/** The warning `init` and `seed` give when the preflight could not read every node. */
export function incompleteWarning(report: PreflightReport): string {
  return `preflight could not read every node (${report.unchecked.join('; ')}); nothing unsafe was seen on the others. Run "idgen-cass preflight" once every DC is reachable.`;
}
