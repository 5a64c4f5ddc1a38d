/** Types of src/start.js (plain JavaScript: it runs before Node's TypeScript support is needed). */
export declare const MINIMUM_NODE_MAJOR: number;
export declare function unsupportedNodeMessage(version: string, command: string): string | null;
export declare function requireSupportedNode(command: string): void;
export declare function enableCompileCache(): void;
export declare const BUNDLE_DIRECTORY: string;
export declare const BUNDLE_MANIFEST: string;
export declare const BUNDLE_MANIFEST_VERSION: number;
export declare function serverEntry(root?: string, env?: Record<string, string | undefined>): string;
export declare function processServerEntry(): string;
export declare function serverModule(source: string, root?: string, env?: Record<string, string | undefined>): string;
export declare const START_NODE_FLAGS: readonly string[];
export declare function restartArguments(argv?: readonly string[], execArgv?: readonly string[], env?: Record<string, string | undefined>): string[] | null;
export declare function restartWithStartFlags(): void;
export declare const COMMANDS_WITH_START_FLAGS: readonly string[];
export declare function reasonToRunAsStarted(
  proc?: Pick<NodeJS.Process, 'execve' | 'channel' | 'execArgv' | 'env' | 'execPath'> & { permission?: unknown },
  listDescriptors?: () => Map<number, string> | null,
): string | null;
