/**
 * The docs point into the code by file name (docs/design.md's safety argument above all), so a file
 * moved or renamed must take its mentions along. Every code file a doc names in backticks exists:
 * a path from the repository's root as written, a bare file name somewhere under src/ or scripts/.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';

import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;
const DOCS = ['README.md', ...readdirSync(join(root, 'docs')).map((f) => `docs/${f}`)].filter((f) =>
  f.endsWith('.md'),
);

function filesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => e.name);
}

const codeNames = new Set([...filesUnder('src'), ...filesUnder('scripts')]);

/** Backticked names of TypeScript files in `text`, e.g. `src/allocator/cas.ts` or `cas.ts`. */
function namedCodeFiles(text: string): string[] {
  return [...text.matchAll(/`([\w./-]+\.ts)`/g)].map((m) => m[1]!);
}

describe('code files named in the docs', () => {
  it('finds backticked file names and only those', () => {
    expect(namedCodeFiles('see `src/a/b.ts` and `c.ts`, not d.ts or `e.tsx`')).toEqual([
      'src/a/b.ts',
      'c.ts',
    ]);
  });

  it.each(DOCS)('%s names only files that exist', (doc) => {
    const missing = namedCodeFiles(readFileSync(join(root, doc), 'utf8')).filter((name) =>
      name.includes('/') ? !existsSync(join(root, name)) : !codeNames.has(basename(name)),
    );
    expect(missing, `${doc} names files that are gone; update the doc`).toEqual([]);
  });
});
