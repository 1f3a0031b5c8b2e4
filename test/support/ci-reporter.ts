/**
 * A vitest reporter for CI (vitest.config.ts adds it when IDGEN_REQUIRE_ALL_TESTS=1, which
 * .ci/run sets): a run passes only if it ran every test it has. Vitest itself exits 0 on skipped
 * and todo tests, and on a project whose pattern matches no file; this reporter fails the run on
 * them, and on any test file on disk (`test/<project>/**\/*.test.ts`) that its project did not
 * load, but for those a Paxos-dependent-only run leaves out (paxos-independent.ts). `.only` needs
 * nothing here: .ci/run sets CI too, which turns vitest's allowOnly off, and a focused test fails
 * the run.
 */
import fs from 'node:fs';
import path from 'node:path';

import type { Reporter, TestModule, Vitest } from 'vitest/node';

import { PAXOS_INDEPENDENT, paxosDependentOnly } from './paxos-independent.js';

/** What a finished run loaded and ran, with paths relative to the root. */
export interface RunSummary {
  /** The projects the run had. */
  readonly projects: readonly string[];
  /** Every test file each project loaded. */
  readonly loaded: readonly { readonly project: string; readonly file: string }[];
  /** Every test file on disk under `test/<project>/`, by project. */
  readonly onDisk: Readonly<Record<string, readonly string[]>>;
  /** Tests that did not run: skipped, todo, or left pending. */
  readonly notRun: readonly {
    readonly file: string;
    readonly name: string;
    readonly why: string;
  }[];
}

/** Why the run does not count, one line each; empty when it ran everything. */
export function completenessProblems(run: RunSummary): string[] {
  const problems: string[] = [];
  for (const project of run.projects) {
    const loaded = new Set(run.loaded.filter((l) => l.project === project).map((l) => l.file));
    const onDisk = run.onDisk[project] ?? [];
    if (loaded.size === 0) problems.push(`project ${project} loaded no test file`);
    const missing = onDisk.filter((file) => !loaded.has(file));
    if (missing.length > 0) {
      problems.push(
        `project ${project} loaded ${loaded.size} of the ${onDisk.length} test files on disk; not loaded: ${missing.join(', ')}`,
      );
    }
  }
  for (const test of run.notRun) problems.push(`${test.file} > ${test.name}: ${test.why}`);
  return problems;
}

/** Test files (`*.test.ts`) under `dir`, relative to `root`, sorted. */
export function testFilesUnder(root: string, dir: string): string[] {
  const absolute = path.join(root, dir);
  if (!fs.existsSync(absolute)) return [];
  return fs
    .readdirSync(absolute, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => path.join(dir, file).split(path.sep).join('/'))
    .sort();
}

export default class CompletenessReporter implements Reporter {
  private vitest: Vitest | undefined;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunEnd(testModules: readonly TestModule[]): void {
    const root = this.vitest?.config.root ?? process.cwd();
    const relative = (file: string) => path.relative(root, file).split(path.sep).join('/');
    const projects = (this.vitest?.projects ?? []).map((p) => p.name);
    const run: RunSummary = {
      projects,
      loaded: testModules.map((m) => ({ project: m.project.name, file: relative(m.moduleId) })),
      onDisk: Object.fromEntries(
        projects.map((name) => [
          name,
          testFilesUnder(root, path.join('test', name)).filter(
            (file) => !(paxosDependentOnly() && PAXOS_INDEPENDENT.includes(file)),
          ),
        ]),
      ),
      notRun: testModules.flatMap((m) =>
        [...m.children.allTests()]
          .filter((t) => t.result().state !== 'passed' && t.result().state !== 'failed')
          .map((t) => ({
            file: relative(m.moduleId),
            name: t.fullName,
            why: `${t.result().state} (${t.options.mode})`,
          })),
      ),
    };
    const problems = completenessProblems(run);
    if (problems.length === 0) {
      process.stderr.write(
        `CI: every test ran (${run.loaded.length} test files; ${projects.map((p) => `${p}: ${run.onDisk[p]?.length ?? 0} on disk`).join(', ')})\n`,
      );
      return;
    }
    process.stderr.write(
      `CI: the run did not run every test:\n${problems.map((p) => `  ${p}`).join('\n')}\n`,
    );
    process.exitCode = 1;
  }
}
