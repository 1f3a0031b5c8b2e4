/* global URL */
// Resolves the torture worker's import of the library to fake-index.mjs.
export async function resolve(specifier, context, next) {
  if (
    specifier.endsWith('src/index.js') &&
    context.parentURL?.endsWith('scripts/torture/worker.ts')
  ) {
    return { url: new URL('./fake-index.mjs', import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}
