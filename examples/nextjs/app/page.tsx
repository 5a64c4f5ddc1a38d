export default function Home() {
  return (
    <main>
      <h1>Home</h1>
      <p>Public.</p>
      <p>
        <a href="/auth/signin?returnTo=/dashboard">Sign in</a> · <a href="/dashboard">Dashboard</a> · <a href="/admin">Admin</a> · <a href="/api/me">/api/me</a>
      </p>
    </main>
  );
}
