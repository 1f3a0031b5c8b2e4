/** Installs the pinned Cassandra's jars from Maven Central into the cache; writes node configs. */
import fs from 'node:fs';
import path from 'node:path';
import { run } from './nodes.js';
import { CASSANDRA_VERSION, CQL_PORT, STORAGE_PORT, cacheDir, ClusterError } from './topology.js';
import type { NodeSpec, Topology } from './topology.js';

const libDir = () => path.join(cacheDir(), `cassandra-${CASSANDRA_VERSION}`, 'lib');

export async function checkPrerequisites(): Promise<void> {
  for (const [tool, flag] of Object.entries({ java: '-version', mvn: '-v' })) {
    try {
      await run(tool, [flag]);
    } catch {
      throw new ClusterError(
        `"${tool}" was not found on PATH; the local cluster needs Java 17 and Maven (e.g. apt-get install openjdk-17-jre-headless maven).`,
      );
    }
  }
}

export async function installCassandra(log: (line: string) => void): Promise<string> {
  const home = path.dirname(libDir());
  const marker = path.join(home, '.complete');
  if (fs.existsSync(marker)) return libDir();
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(
    path.join(home, 'pom.xml'),
    `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>idgen-cass</groupId><artifactId>local-cassandra</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId>
      <version>${CASSANDRA_VERSION}</version>
    </dependency>
  </dependencies>
</project>
`,
  );
  log(`installing Cassandra ${CASSANDRA_VERSION} from Maven Central into ${home}`);
  fs.rmSync(libDir(), { recursive: true, force: true });
  try {
    const output = `-DoutputDirectory=${libDir()}`;
    const args = ['-q', '-B', 'dependency:copy-dependencies', output, '-DincludeScope=runtime'];
    await run('mvn', args, { cwd: home, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const out = err instanceof Error && 'stdout' in err ? String(err.stdout).slice(-2000) : '';
    throw new ClusterError(
      `Maven could not download cassandra-all ${CASSANDRA_VERSION} (is Maven Central reachable?): ${out.trim().split('\n').pop() ?? ''}`,
    );
  }
  fs.chmodSync(home, 0o755);
  fs.writeFileSync(marker, new Date().toISOString());
  return libDir();
}

/** Java 17 module flags from Cassandra's conf/jvm17-server.options. */
export const JAVA17_FLAGS = [
  ...`java.base/jdk.internal.misc java.management.rmi/com.sun.jmx.remote.internal.rmi
    java.rmi/sun.rmi.registry java.rmi/sun.rmi.server java.sql/java.sql java.base/java.lang.ref
    jdk.unsupported/sun.misc jdk.compiler/com.sun.tools.javac.file jdk.attach/sun.tools.attach`
    .split(/\s+/)
    .map((m) => `--add-exports ${m}=ALL-UNNAMED`),
  ...`java.base/java.lang.module java.base/jdk.internal.loader java.base/jdk.internal.ref
    java.base/jdk.internal.reflect java.base/jdk.internal.math java.base/jdk.internal.module
    java.base/jdk.internal.util.jar jdk.management/com.sun.management.internal java.base/sun.nio.ch
    java.base/java.io java.base/java.lang.reflect jdk.compiler/com.sun.tools.javac
    java.base/java.lang java.base/java.util java.base/java.nio`
    .split(/\s+/)
    .map((m) => `--add-opens ${m}=ALL-UNNAMED`),
];

export const COMMITLOG_COMPRESSION = `commitlog_compression:
  - class_name: LZ4Compressor
    parameters:
      -`;

export function writeNodeConfig(
  node: NodeSpec,
  seeds: readonly string[],
  topology: Topology,
): void {
  // Nine JVMs next to the tests: fewer threads, C1 only; 512 MiB heap, as every table costs heap.
  const crowded = topology.dcs * topology.nodesPerDc > 3;
  const sizes = { heap: '512m', threads: crowded ? 4 : 8, memtableMiB: crowded ? 32 : 64 };
  // Compressed periodic segments stay in the heap until they sync: a SIGKILL loses them.
  const commitlog =
    topology.commitlog === 'batch'
      ? 'commitlog_sync: batch'
      : `commitlog_sync: periodic\ncommitlog_sync_period: 10000ms\n${COMMITLOG_COMPRESSION}`;
  const dir = (d: string) => path.join(node.dir, d);
  const conf = dir('conf');
  for (const d of ['conf', 'data', 'commitlog', 'saved_caches', 'hints', 'cdc_raw', 'logs']) {
    fs.mkdirSync(dir(d), { recursive: true });
  }
  fs.writeFileSync(
    path.join(conf, 'cassandra.yaml'),
    `# Written by scripts/cluster for node ${node.name}; regenerated on every start.
cluster_name: idgen-cass-local
num_tokens: 1
initial_token: ${node.token}
auto_bootstrap: false
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: GossipingPropertyFileSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "${seeds.join(',')}"
listen_address: ${node.address}
rpc_address: ${node.address}
storage_port: ${STORAGE_PORT}
native_transport_port: ${CQL_PORT}
start_native_transport: true
data_file_directories:
  - ${dir('data')}
commitlog_directory: ${dir('commitlog')}
saved_caches_directory: ${dir('saved_caches')}
hints_directory: ${dir('hints')}
cdc_raw_directory: ${dir('cdc_raw')}
${commitlog}
block_for_peers_timeout_in_secs: 0
auto_snapshot: false
concurrent_compactors: 1
compaction_throughput: 16MiB/s
concurrent_reads: ${sizes.threads}
concurrent_writes: ${sizes.threads}
concurrent_counter_writes: 2
native_transport_max_threads: 32
memtable_heap_space: ${sizes.memtableMiB}MiB
memtable_offheap_space: ${sizes.memtableMiB}MiB
key_cache_size: 8MiB
prepared_statements_cache_size: 8MiB
paxos_variant: ${topology.paxos}
paxos_on_linearizability_violations: log
`,
  );
  fs.writeFileSync(path.join(conf, 'cassandra-rackdc.properties'), `dc=${node.dc}\nrack=rack1\n`);
  fs.writeFileSync(
    path.join(conf, 'logback.xml'),
    `<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${dir('logs')}/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE" /></root>
  <logger name="org.apache.cassandra" level="INFO" />
</configuration>
`,
  );
  const lib = libDir();
  const jamm = fs.readdirSync(lib).find((f) => /^jamm-.*\.jar$/.test(f));
  const args = [
    `-Xms${sizes.heap}`,
    `-Xmx${sizes.heap}`,
    ...(crowded ? ['-XX:TieredStopAtLevel=1'] : []),
    ...'-XX:+UseG1GC -XX:ParallelGCThreads=1 -XX:ConcGCThreads=1 -Xss256k'.split(' '),
    ...'-Djava.net.preferIPv4Stack=true -Djdk.attach.allowAttachSelf=true'.split(' '),
    '-Dio.netty.tryReflectionSetAccessible=true',
    ...(jamm ? [`-javaagent:${path.join(lib, jamm)}`] : []),
    ...JAVA17_FLAGS,
    `-Dcassandra.config=file://${path.join(conf, 'cassandra.yaml')}`,
    `-Dcassandra-rackdc.properties=file://${path.join(conf, 'cassandra-rackdc.properties')}`,
    `-Dcassandra.logdir=${dir('logs')}`,
    `-Dlogback.configurationFile=file://${path.join(conf, 'logback.xml')}`,
    '-Dcassandra-foreground=yes',
    `-Dcassandra.jmx.local.port=${node.jmxPort}`,
    ...'-Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=1000'.split(' '),
    ...'-Dcassandra.superuser_setup_delay_ms=0 -Dcassandra.available_processors=2'.split(' '),
    // A schema push dropped on a loaded host is pulled at the next round.
    '-Dcassandra.schema_pull_interval_ms=5000',
    ...['-cp', `${lib}/*`, 'org.apache.cassandra.service.CassandraDaemon'],
  ];
  fs.writeFileSync(path.join(conf, 'jvm.args'), args.join('\n') + '\n');
}
