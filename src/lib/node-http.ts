/**
 * `node:http` and `node:https` for our ES modules, taken with `process.getBuiltinModule` rather
 * than `import`. An `import` of `node:http` from an ES module copies every export of the built-in
 * into the module's namespace, and reading Node 24's lazy `WebSocket`, `MessageEvent` and
 * `CloseEvent` exports loads Node's bundled undici: about 16 MB of resident memory in every process,
 * for a fetch client the server never uses. Fastify, pg and the rest `require` these modules, which
 * copies nothing. `import type` from 'node:http' costs nothing and stays as it is.
 * (src/lib/node-http.test.ts keeps a plain import from coming back.)
 */
export const http = process.getBuiltinModule('node:http');
export const https = process.getBuiltinModule('node:https');
