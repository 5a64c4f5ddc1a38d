import type { NextConfig } from 'next';

const nextConfig: NextConfig = {
  // Next.js 16's caching model: data read per request (here the session, through cookies) must sit
  // inside a <Suspense> boundary, or `next build` stops. Partial Prefetching goes with it (16.4+).
  cacheComponents: true,
  partialPrefetching: true,
};

export default nextConfig;
