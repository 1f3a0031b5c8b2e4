// The layers of src/, lowest first, and the lower layers each may import besides its own. An
// import anywhere else, or an import cycle, fails `npm run lint` (docs/contributing.md).
const LAYERS = {
  // model: values and rules with no I/O, and the storage port, which speaks only in their terms.
  model: {
    paths: [
      '^src/(errors|names|order|timers|options|logger|mutations|quantities)\\.ts$',
      '^src/settings/',
      '^src/allocator/(dc-state|watermarks|block-buffer|cas|sizing|block|clock)\\.ts$',
      '^src/store/port\\.ts$',
    ],
    imports: [],
  },
  // protocol: the allocator's DC and process levels, which reach a store only through the port;
  // every module of src/allocator/ that is neither model nor process.
  protocol: {
    paths: [
      '^src/allocator/(?!(dc-state|watermarks|block-buffer|cas|sizing|block|clock|id-gen)\\.ts$)',
    ],
    imports: ['model'],
  },
  // store: the port's implementations and their Cassandra client; beside the protocol, apart.
  store: {
    paths: ['^src/store/(?!port\\.ts$)'],
    imports: ['model'],
  },
  // process: the allocator a process holds (IdGen), over any store; it knows no surface.
  process: {
    paths: ['^src/allocator/id-gen\\.ts$', '^src/lazy-modules\\.ts$'],
    imports: ['model', 'protocol'],
  },
  // surfaces: admin reads and initSchema, metrics, the HTTP service; they may use each other.
  surfaces: {
    paths: ['^src/(admin|metrics|serve)/', '^src/schema\\.ts$'],
    imports: ['model', 'protocol', 'store', 'process'],
  },
  // wiring: the exported IdGen with its metrics, connect(), and the package's entry modules.
  wiring: {
    paths: ['^src/(connect|index|testing)\\.ts$'],
    imports: ['model', 'protocol', 'store', 'process', 'surfaces'],
  },
  // cli: the command-line program, on top of everything.
  cli: {
    paths: ['^src/cli/'],
    imports: ['model', 'protocol', 'store', 'process', 'surfaces', 'wiring'],
  },
};

const oneOf = (paths) => `(${paths.join('|')})`;
const pathsOf = (names) => names.flatMap((name) => LAYERS[name].paths);

export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycle, not even within one layer.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'resolvable',
      comment: 'Every import resolves to a file: one that does not would escape these rules.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'no-layer',
      comment: 'Every module of src/ belongs to a layer of .dependency-cruiser.mjs.',
      severity: 'error',
      from: { path: '^src/', pathNot: oneOf(pathsOf(Object.keys(LAYERS))) },
      to: {},
    },
    ...Object.entries(LAYERS).map(([name, layer]) => ({
      name: `layer-${name}`,
      comment: `A ${name} module imports only from ${[name, ...layer.imports].join(', ')}.`,
      severity: 'error',
      from: { path: oneOf(layer.paths) },
      to: { path: '^src/', pathNot: oneOf(pathsOf([name, ...layer.imports])) },
    })),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
