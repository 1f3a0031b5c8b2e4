/** From the raw results to results.json, REPORT.md and the lines printed on stdout. */
import fs from 'node:fs/promises';
import path from 'node:path';

import * as prettier from 'prettier';

import { renderMarkdown } from './report/markdown.js';
import { ratioText, summarize, type Summary } from './report/summary.js';
import type { RawResults } from './results.js';
import { RESULTS_SCHEMA } from './results.js';

export interface ResultsFile {
  readonly schema: typeof RESULTS_SCHEMA;
  readonly summary: Summary;
  readonly raw: RawResults;
}

export interface Report {
  readonly json: ResultsFile;
  readonly markdown: string;
}

export function buildReport(raw: RawResults): Report {
  const summary = summarize(raw);
  return {
    json: { schema: RESULTS_SCHEMA, summary, raw },
    markdown: renderMarkdown(raw, summary),
  };
}

/** As the repository's prettier settings print it. */
export async function formatMarkdown(markdown: string, file: string): Promise<string> {
  const config = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(markdown, { ...config, parser: 'markdown', filepath: file });
}

/** What stdout gets: where the report is, then its key ratios, one a line. */
export function headline(report: Report, markdownFile: string): string {
  const ratios = report.json.summary.ratios.map(
    (r) => `${ratioText(r)}  ${r.label.replace(/`/g, '')}`,
  );
  return [`Report: ${markdownFile}`, 'Key ratios (per run, then median):', ...ratios, ''].join(
    '\n',
  );
}

export async function writeReport(
  report: Report,
  dir: string,
): Promise<{ json: string; markdown: string }> {
  await fs.mkdir(dir, { recursive: true });
  const json = path.join(dir, 'results.json');
  const markdown = path.join(dir, 'REPORT.md');
  await fs.writeFile(json, JSON.stringify(report.json, null, 2) + '\n');
  await fs.writeFile(markdown, await formatMarkdown(report.markdown, path.resolve(markdown)));
  return { json, markdown };
}
