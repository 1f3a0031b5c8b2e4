/** `npx tsx scripts/bench/rebuild-report.ts [dir]`: rebuilds the report from its raw runs. */
import fs from 'node:fs/promises';
import path from 'node:path';

import { buildReport, headline, writeReport, type ResultsFile } from './report.js';

const dir = process.argv[2] ?? 'bench';
// JSON wrote NaN (nothing measured) as null; read back as NaN, the summary is the run's own.
const file = JSON.parse(await fs.readFile(path.join(dir, 'results.json'), 'utf8'), (_key, value) =>
  value === null ? NaN : (value as unknown),
) as ResultsFile;
const report = buildReport(file.raw);
const files = await writeReport(report, dir);
process.stdout.write(headline(report, files.markdown));
