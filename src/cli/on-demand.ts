/**
 * context.ts's `withServices` and `withStorage`, for the commands' files to import: context.ts
 * brings the configuration, storage and every module's services (most of a second, 90 MB), which
 * a command needs only once its command line is read. Imported statically, a wrong command line
 * (exit 2) paid for all of it before it was refused; through these it is refused first.
 */
import type * as Context from './context.ts';

export const withServices: typeof Context.withServices = async (io, fn) => (await import('./context.ts')).withServices(io, fn);

export const withStorage: typeof Context.withStorage = async (io, options, fn) => (await import('./context.ts')).withStorage(io, options, fn);
