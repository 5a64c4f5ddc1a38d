import { gatehouseUser } from '../../lib/gatehouse-user';

// Per request: the user comes from the request header proxy.ts sets.
export const dynamic = 'force-dynamic';

export default async function Dashboard() {
  const user = await gatehouseUser();
  return (
    <main>
      <h1>Dashboard</h1>
      <p id="signed-in">
        Signed in as <code>{user.userId}</code> (roles: {user.roles.join(', ') || 'none'}).
      </p>
    </main>
  );
}
