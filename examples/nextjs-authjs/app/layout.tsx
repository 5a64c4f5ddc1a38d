import type { ReactNode } from 'react';
import Link from 'next/link';

export const metadata = { title: 'Gatehouse example: Auth.js in Next.js' };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <nav>
          <Link href="/">Home</Link> · <Link href="/dashboard">Dashboard</Link>
        </nav>
        {children}
      </body>
    </html>
  );
}
