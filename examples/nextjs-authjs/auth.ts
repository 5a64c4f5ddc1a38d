import NextAuth, { type DefaultSession } from 'next-auth';

declare module 'next-auth' {
  interface Session {
    user: { roles: string[] } & DefaultSession['user'];
  }
}

export const { handlers, auth, signIn, signOut } = NextAuth({
  providers: [
    {
      id: 'gatehouse',
      name: 'Gatehouse',
      type: 'oidc',
      issuer: process.env.AUTH_GATEHOUSE_ISSUER,
      clientId: process.env.AUTH_GATEHOUSE_ID,
      clientSecret: process.env.AUTH_GATEHOUSE_SECRET,
      checks: ['pkce', 'state', 'nonce'],
      authorization: { params: { scope: 'openid email profile roles' } },
      // Gatehouse returns name, e-mail and roles from userinfo, not in the ID token of a sign-in.
      idToken: false,
    },
  ],
  callbacks: {
    jwt({ token, profile }) {
      // `profile` (the userinfo claims) is there only at sign-in: keep the roles in Auth.js's token.
      if (profile) token.roles = Array.isArray(profile.roles) ? profile.roles : [];
      return token;
    },
    session({ session, token }) {
      session.user.roles = Array.isArray(token.roles) ? token.roles : [];
      return session;
    },
  },
});
