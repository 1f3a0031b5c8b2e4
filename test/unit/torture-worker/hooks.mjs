/* global URL */
// Resolves the import of the library by the torture worker and by the draw worker of the
// integration tests to fake-index.mjs.
export async function resolve(specifier, context, next) {
  if (
    specifier.endsWith('src/index.js') &&
    (context.parentURL?.endsWith('scripts/torture/worker.ts') ||
      context.parentURL?.endsWith('scripts/draw-worker.ts'))
  ) {
    return { url: new URL('./fake-index.mjs', import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}
