import { redirect } from 'next/navigation';
import { signIn, signOut } from '@/auth';

export function SignIn() {
  return (
    <form
      action={async () => {
        'use server';
        await signIn('gatehouse', { redirectTo: '/dashboard' });
      }}
    >
      <button type="submit">Sign in with Gatehouse</button>
    </form>
  );
}

export function SignOut() {
  return (
    <form
      action={async () => {
        'use server';
        // Ends the app's session (Auth.js's cookie)...
        await signOut({ redirect: false });
        // ...then Gatehouse's (RP-initiated logout): Gatehouse asks the person to confirm, then
        // sends them back to the app's home page, registered as a post-logout redirect URI.
        const url = new URL(`${process.env.AUTH_GATEHOUSE_ISSUER}/oidc/session/end`);
        url.searchParams.set('client_id', process.env.AUTH_GATEHOUSE_ID!);
        url.searchParams.set('post_logout_redirect_uri', new URL('/', process.env.AUTH_URL).href);
        redirect(url.href);
      }}
    >
      <button type="submit">Sign out</button>
    </form>
  );
}
