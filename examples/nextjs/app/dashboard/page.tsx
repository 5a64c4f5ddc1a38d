import { cookies } from 'next/headers';
import { redirect } from 'next/navigation';
import { gatehouse } from '../../lib/gatehouse';

export default async function Dashboard() {
  // proxy.ts let only a session through (refreshed if it was due); this reads it.
  const user = await gatehouse.user(await cookies());
  if (user === null) redirect('/auth/signin?returnTo=/dashboard');
  return (
    <main>
      <h1>Dashboard</h1>
      <p id="signed-in">
        Signed in as <strong id="email">{user.email}</strong> ({user.name ?? 'no name'}), roles: <span id="roles">{user.roles.join(', ') || 'none'}</span>.
      </p>
      <form method="post" action="/auth/signout">
        <button type="submit">Sign out</button>
      </form>
    </main>
  );
}
