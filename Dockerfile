# The idgen-cass service (`idgen-cass serve`) as a container image.
#   docker build -t idgen-cass .
#   docker run --rm -p 8080:8080 idgen-cass --contact-points 10.0.1.5 --dc dc1 serve
# Global options come before the command (or set IDGEN_CONTACT_POINTS, IDGEN_DC, …); any other
# command runs the same way: `docker run --rm idgen-cass --dc dc1 … status`.

# Build: every dependency, then the TypeScript compiled to dist/.
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Runtime: production dependencies only. cassandra-driver, the peer dependency, is among them:
# npm installs a project's own peer dependencies, and --omit=dev keeps them.
FROM node:20-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY schema.cql ./
COPY --from=build /app/dist/src ./dist/src
RUN chmod +x dist/src/cli/main.js && ln -s /app/dist/src/cli/main.js /usr/local/bin/idgen-cass
USER node
EXPOSE 8080
# node is PID 1 and handles SIGTERM itself: requests in flight finish, unused IDs go back; a
# second signal ends it at once (exit 143), which node exits on itself (PID 1 has no default).
# Liveness only: Docker has no readiness, and an unhealthy container is replaced (Swarm) or
# taken out of rotation. /readyz answers 503 in a DC that cannot get IDs right now, which a
# restart does not cure; load balancers and Kubernetes readiness probes use /readyz instead.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.IDGEN_SERVE_PORT ?? 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["idgen-cass"]
CMD ["serve"]
