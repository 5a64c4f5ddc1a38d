/**
 * Whether this process runs the server's bundle (scripts/build-server.js, which `npm start` runs
 * while it is current: src/start.js `serverEntry`) or its source. The build defines the name; the
 * source never does. The start's "Gatehouse listening" line says which.
 */
declare const __GATEHOUSE_BUNDLE__: boolean | undefined;

export const RUNS_FROM: 'bundle' | 'source' = typeof __GATEHOUSE_BUNDLE__ !== 'undefined' && __GATEHOUSE_BUNDLE__ ? 'bundle' : 'source';
