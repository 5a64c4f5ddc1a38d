/** Types of src/start.js (plain JavaScript: it runs before Node's TypeScript support is needed). */
export declare const MINIMUM_NODE_MAJOR: number;
export declare function unsupportedNodeMessage(version: string, command: string): string | null;
export declare function requireSupportedNode(command: string): void;
export declare function enableCompileCache(): void;
