// Loaded with --import: the worker under test gets fake-index.mjs for the library (hooks.mjs).
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
