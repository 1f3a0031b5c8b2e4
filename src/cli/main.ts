#!/usr/bin/env node
/**
 * `idgen-cass`: the command line. Results on stdout, logs and errors on stderr; exit codes in
 * ./exit-codes.ts.
 */

import { runCli } from './program.js';

// `idgen-cass next orders -n 1000000 | head`: a closed pipe ends the output; the failed write
// ends the command (see handleError), which still closes the Cassandra client.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
});

const code = await runCli(process.argv);
process.exitCode = code;
// Everything is written and closed by now. A driver whose connect() failed can leave a socket
// open (cassandra-driver 4.x, e.g. after an unknown --dc): do not let it keep the CLI alive.
setTimeout(() => process.exit(code), 200).unref();
