/** The CLI run in-process, its output captured: what the CLI unit tests observe. */
import { Writable } from 'node:stream';

import { runCli } from '../../src/cli/program.js';

/** A stream that hands every chunk written to it to `append` as text. */
export function capture(append: (text: string) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      append(chunk.toString());
      done();
    },
  });
}

/** Runs `idgen-cass ...args` in this process; resolves with its exit code and output. */
export async function cli(
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['node', 'idgen-cass', ...args], {
    stdout: capture((t) => (stdout += t)),
    stderr: capture((t) => (stderr += t)),
  });
  return { code, stdout, stderr };
}
