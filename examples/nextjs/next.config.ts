import type { NextConfig } from 'next';

const nextConfig: NextConfig = {
  // No telemetry prompts or image optimisation needed for this example.
  poweredByHeader: false,
};

export default nextConfig;
