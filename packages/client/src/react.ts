/**
 * React bindings: `GatehouseProvider` puts a client in context and resolves its session once
 * mounted; `useSession()` follows the client's session state (this tab's and, through the client,
 * other tabs'). No JSX: the package is plain TypeScript run by Node's type stripping too.
 */
import { createContext, createElement, useContext, useEffect, useSyncExternalStore, type ReactElement, type ReactNode } from 'react';
import type { GatehouseClient, RefreshResult, Session, SignInResult, SignOutResult } from './index.ts';

const ClientContext = createContext<GatehouseClient | null>(null);

export interface GatehouseProviderProps {
  client: GatehouseClient;
  children?: ReactNode;
}

export function GatehouseProvider({ client, children }: GatehouseProviderProps): ReactElement {
  useEffect(() => {
    // A reload starts 'loading': ask the service once (stored tokens, or cookies) to settle it.
    if (client.getState().status === 'loading') void client.getSession();
  }, [client]);
  return createElement(ClientContext.Provider, { value: client }, children);
}

/** The client of the nearest `GatehouseProvider`. */
export function useGatehouseClient(): GatehouseClient {
  const client = useContext(ClientContext);
  if (client === null) throw new Error('useSession() and useGatehouseClient() need a <GatehouseProvider client={…}> above them');
  return client;
}

export interface UseSessionResult {
  status: 'loading' | 'signed-in' | 'signed-out';
  session: Session | null;
  signIn(credentials: { email: string; password: string }): Promise<SignInResult>;
  signInWithPasskey(): Promise<SignInResult>;
  signOut(): Promise<SignOutResult>;
  refresh(): Promise<RefreshResult>;
}

export function useSession(): UseSessionResult {
  const client = useGatehouseClient();
  // The server snapshot is the client's state too: 'loading' during server rendering.
  const state = useSyncExternalStore(client.subscribe, client.getState, client.getState);
  return { status: state.status, session: state.session, signIn: client.signIn, signInWithPasskey: client.signInWithPasskey, signOut: client.signOut, refresh: client.refresh };
}
