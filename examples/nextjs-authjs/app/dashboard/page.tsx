import { Suspense } from 'react';
import { auth } from '@/auth';
import { SignIn, SignOut } from '@/components/auth-buttons';

export default function Dashboard() {
  return (
    <main>
      <h1>Dashboard</h1>
      {/* The session is read per request (cookies): with cacheComponents it must be inside <Suspense>. */}
      <Suspense fallback={<p>Loading…</p>}>
        <CurrentUser />
      </Suspense>
    </main>
  );
}

async function CurrentUser() {
  const session = await auth();
  if (!session?.user) {
    return (
      <>
        <p id="signed-out">You are not signed in.</p>
        <SignIn />
      </>
    );
  }
  const isAdmin = session.user.roles.includes('ADMIN');
  return (
    <>
      <p id="signed-in">
        Signed in as {session.user.email}
        {isAdmin ? ' (admin)' : ''}
      </p>
      <p>Name: {session.user.name ?? '—'}. Roles: {session.user.roles.join(', ') || 'none'}.</p>
      <SignOut />
    </>
  );
}
