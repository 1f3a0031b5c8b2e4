/**
 * `npm run campaigns`: writes torture/CAMPAIGNS.md from the committed reports under
 * torture/campaigns and torture/negative-controls (torture/summary.ts). With `--check` it writes
 * nothing and exits 1 if the committed page is not what the reports generate.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Command, CommanderError } from 'commander';

import { CAMPAIGNS_PAGE, campaignsPage } from './torture/summary.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

async function main(): Promise<void> {
  const options = new Command('campaigns')
    .description(`writes ${CAMPAIGNS_PAGE} from the committed campaign reports`)
    .option('--check', `write nothing; exit 1 if ${CAMPAIGNS_PAGE} is out of date`, false)
    .exitOverride()
    .parse(process.argv)
    .opts<{ check: boolean }>();
  const file = path.join(ROOT, CAMPAIGNS_PAGE);
  const page = await campaignsPage(ROOT);
  if (!options.check) {
    fs.writeFileSync(file, page);
    process.stdout.write(`${CAMPAIGNS_PAGE}\n`);
    return;
  }
  const committed = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined;
  if (committed !== page) {
    const why =
      committed === undefined
        ? 'is missing'
        : 'is out of date: the reports under torture/campaigns and torture/negative-controls generate another page';
    process.stderr.write(`${CAMPAIGNS_PAGE} ${why}. Run "npm run campaigns" and commit it.\n`);
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  // --help ends the parse with a CommanderError whose exit code is 0; commander printed the rest.
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : 2;
    return;
  }
  console.error(error);
  process.exitCode = 2;
});
