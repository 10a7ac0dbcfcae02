# One image for every process of the Procfile; docker-compose.yml gives each service its Procfile command.
# Node 24 LTS (the suite also runs on Node 20: package.json "engines").
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
# Sources (.dockerignore keeps out node_modules, dist, tests, local secrets); tsconfig.build.json picks what is built.
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY package.json Procfile ./
COPY migrations migrations
USER node
EXPOSE 3000 3001 4000
CMD ["node", "dist/api/server.js"]
