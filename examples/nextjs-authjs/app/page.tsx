import { SignIn } from '@/components/auth-buttons';

export default function Home() {
  return (
    <main>
      <h1>Public</h1>
      <p>Anyone can see this page. The dashboard shows who is signed in.</p>
      <SignIn />
    </main>
  );
}
