/** Types of scripts/build-server.js (plain JavaScript: it runs at install time, before anything else). */
export declare const KEEP_RETIRED_MS: number;
export declare function previousBuild(builds: { current: string | undefined; previous: string | undefined }, folder: string): string | undefined;
export declare function removeOldBuilds(directory: string, kept: readonly string[], now?: number): void;
