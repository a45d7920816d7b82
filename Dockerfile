FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci's postinstall applies these to node_modules (patch-package)
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY . .
ENV HOST=0.0.0.0 PORT=3000
EXPOSE 3000
ENTRYPOINT ["node", "bin/attribution.mjs"]
CMD ["start"]
