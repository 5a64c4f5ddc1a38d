import { cookies } from 'next/headers';
import { gatehouse } from '../../lib/gatehouse';

export default async function Admin() {
  // proxy.ts refused everyone without the ADMIN role (403).
  const user = await gatehouse.user(await cookies());
  return (
    <main>
      <h1>Admin area</h1>
      <p>
        For <code>{user?.email}</code>.
      </p>
    </main>
  );
}
