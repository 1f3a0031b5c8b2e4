/** `npm run campaigns [-- --check]`: writes, or checks, CAMPAIGNS.md and the README's totals. */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Command, CommanderError } from 'commander';

import { CAMPAIGNS_PAGE, campaignsPage, readmeWithTotals } from './torture/summary.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

async function main(): Promise<void> {
  const options = new Command('campaigns')
    .description(`writes ${CAMPAIGNS_PAGE} and README.md's totals from the committed reports`)
    .option('--check', `write nothing; exit 1 if either is out of date`, false)
    .exitOverride()
    .parse(process.argv)
    .opts<{ check: boolean }>();
  const outputs = [
    { file: CAMPAIGNS_PAGE, text: await campaignsPage(ROOT) },
    { file: 'README.md', text: await readmeWithTotals(ROOT) },
  ];
  for (const { file, text } of outputs) {
    const absolute = path.join(ROOT, file);
    if (!options.check) {
      fs.writeFileSync(absolute, text);
      process.stdout.write(`${file}\n`);
      continue;
    }
    const committed = fs.existsSync(absolute) ? fs.readFileSync(absolute, 'utf8') : undefined;
    if (committed === text) continue;
    const why =
      committed === undefined
        ? 'is missing'
        : 'is out of date: the reports under torture/campaigns and torture/negative-controls generate another';
    process.stderr.write(`${file} ${why}. Run "npm run campaigns" and commit it.\n`);
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  // commander has printed its line; --help ends with exit code 0.
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : 2;
    return;
  }
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 2;
});
