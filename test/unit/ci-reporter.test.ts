import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { completenessProblems, testFilesUnder, type RunSummary } from '../support/ci-reporter.js';
import { PAXOS_INDEPENDENT, paxosDependentOnly } from '../support/paxos-independent.js';

const complete: RunSummary = {
  projects: ['unit', 'integration'],
  loaded: [
    { project: 'unit', file: 'test/unit/a.test.ts' },
    { project: 'unit', file: 'test/unit/b.test.ts' },
    { project: 'integration', file: 'test/integration/c.test.ts' },
  ],
  onDisk: {
    unit: ['test/unit/a.test.ts', 'test/unit/b.test.ts'],
    integration: ['test/integration/c.test.ts'],
  },
  notRun: [],
};

describe('CI reporter: a run counts only if it ran every test', () => {
  it('passes a run that loaded every file on disk and ran every test', () => {
    expect(completenessProblems(complete)).toEqual([]);
  });

  it('fails a skipped or todo test', () => {
    const notRun = [
      { file: 'test/unit/a.test.ts', name: 'a > draws', why: 'skipped (skip)' },
      { file: 'test/unit/b.test.ts', name: 'b > later', why: 'skipped (todo)' },
    ];
    expect(completenessProblems({ ...complete, notRun })).toEqual([
      'test/unit/a.test.ts > a > draws: skipped (skip)',
      'test/unit/b.test.ts > b > later: skipped (todo)',
    ]);
  });

  it('fails a project that loaded fewer files than are on disk, or none', () => {
    const loaded = complete.loaded.filter((l) => l.file !== 'test/unit/b.test.ts');
    expect(completenessProblems({ ...complete, loaded })).toEqual([
      'project unit loaded 1 of the 2 test files on disk; not loaded: test/unit/b.test.ts',
    ]);
    const noIntegration = complete.loaded.filter((l) => l.project !== 'integration');
    expect(completenessProblems({ ...complete, loaded: noIntegration })).toEqual([
      'project integration loaded no test file',
      'project integration loaded 0 of the 1 test files on disk; not loaded: test/integration/c.test.ts',
    ]);
  });

  it('finds the test files on disk, in subfolders too', () => {
    const root = path.join(import.meta.dirname, '..', '..');
    const files = testFilesUnder(root, 'test/unit');
    expect(files).toContain('test/unit/ci-reporter.test.ts');
    expect(files.every((f) => f.startsWith('test/unit/') && f.endsWith('.test.ts'))).toBe(true);
    expect(testFilesUnder(root, 'test/nowhere')).toEqual([]);
  });
});

describe('CI: the Paxos-dependent-only run', () => {
  it('names only integration test files that exist', () => {
    const root = path.join(import.meta.dirname, '..', '..');
    const onDisk = testFilesUnder(root, 'test/integration');
    expect(PAXOS_INDEPENDENT.length).toBeGreaterThan(0);
    for (const file of PAXOS_INDEPENDENT) expect(onDisk).toContain(file);
  });

  it('is on only with IDGEN_PAXOS_DEPENDENT_ONLY=1', () => {
    expect(paxosDependentOnly({ IDGEN_PAXOS_DEPENDENT_ONLY: '1' })).toBe(true);
    expect(paxosDependentOnly({ IDGEN_PAXOS_DEPENDENT_ONLY: '0' })).toBe(false);
    expect(paxosDependentOnly({})).toBe(false);
  });
});
