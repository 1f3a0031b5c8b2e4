#!/usr/bin/env node
/**
 * `idgen-cass`: the command line. Results on stdout, logs and errors on stderr; exit codes in
 * ./exit-codes.ts.
 */

import { runCli } from './program.js';

// A failed write also reaches the write's own callback, where CliContext handles it: a closed
// pipe (`| head`) ends the output and the command's outcome stands; any other failure (a full
// disk) is reported as one line with exit 10. Thrown here, it would be an uncaught exception:
// exit 1 with a stack, before the connections are closed.
process.stdout.on('error', () => undefined);

const code = await runCli(process.argv);
process.exitCode = code;
// Everything is written and closed by now. A driver whose connect() failed can leave a socket
// open (cassandra-driver 4.x, e.g. after an unknown --dc): do not let it keep the CLI alive.
setTimeout(() => process.exit(code), 200).unref();
