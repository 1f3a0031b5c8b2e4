#!/usr/bin/env node
/** `idgen-cass`: results on stdout, logs and errors on stderr; exit codes in ./exit-codes.ts. */
import { runCli } from './program.js';

// CliContext handles a failed write in its callback; unheard here, it would also be uncaught.
process.stdout.on('error', () => undefined);

const code = await runCli(process.argv);
process.exitCode = code;
// A driver whose connect() failed can leave a socket open: it must not keep the CLI alive.
setTimeout(() => process.exit(code), 200).unref();
