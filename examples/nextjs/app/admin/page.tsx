import { gatehouseUser } from '../../lib/gatehouse-user';

export const dynamic = 'force-dynamic';

export default async function Admin() {
  const user = await gatehouseUser();
  return (
    <main>
      <h1>Admin area</h1>
      <p>
        For <code>{user.userId}</code>.
      </p>
    </main>
  );
}
